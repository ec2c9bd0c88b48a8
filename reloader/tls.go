package reloader

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/prometheus/common/config"
)

// TLS configures the client side of HTTPS connections to a reload or
// runtime information URL. prometheus-config-reloader verifies no
// certificate; with a zero TLS, a loopback host (Prometheus in the same pod
// with its self-signed certificate) is not verified either, and any other
// host is verified against the system's roots.
type TLS struct {
	// CAFile holds the certificates of the CAs that verify the server;
	// empty means the system's roots.
	CAFile string
	// CertFile and KeyFile hold the client certificate and its key, presented
	// when the server asks for one. They are read at each connection, so a
	// rotated certificate is used without a restart.
	CertFile, KeyFile string
	// ServerName is the name the server's certificate must hold; empty means
	// the URL's host.
	ServerName string
	// InsecureSkipVerify accepts any server certificate.
	InsecureSkipVerify bool
}

// Client returns an HTTP client for u, without keep-alives (a reload is
// rare), and describes for the log the TLS mode in force. The server's
// certificate is verified unless InsecureSkipVerify is set, or u's host is
// loopback (localhost, 127.0.0.0/8, ::1) and neither CAFile nor ServerName
// is set.
func (c TLS) Client(u *url.URL) (*http.Client, string, error) {
	cfg := config.TLSConfig{
		CAFile: c.CAFile, CertFile: c.CertFile, KeyFile: c.KeyFile,
		ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify,
	}
	var mode string
	switch {
	case u.Scheme != "https":
		mode = "none: not an https URL"
	case c.InsecureSkipVerify:
		mode = "server certificate not verified: insecure skip verify"
	case isLoopback(u.Hostname()) && c.CAFile == "" && c.ServerName == "":
		cfg.InsecureSkipVerify = true
		mode = "server certificate not verified: loopback host and no CA file"
	case c.CAFile != "":
		mode = "server certificate verified with CA file " + c.CAFile
	default:
		mode = "server certificate verified with the system's roots"
	}
	if c.CertFile != "" && u.Scheme == "https" {
		mode += ", client certificate " + c.CertFile
	}
	tlsConfig, err := config.NewTLSConfig(&cfg)
	if err != nil {
		return nil, "", fmt.Errorf("tls for %s: %w", u.Redacted(), err)
	}
	tr := newTransport()
	tr.TLSClientConfig = tlsConfig
	return &http.Client{Transport: tr}, mode, nil
}

// isLoopback reports whether host names this machine: localhost, an
// address in 127.0.0.0/8 or ::1.
func isLoopback(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
