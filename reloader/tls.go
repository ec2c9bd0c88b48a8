package reloader

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
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
	// empty means the system's roots. It is read at each connection, so
	// that a renewed CA, or a renewed server certificate that is its own
	// CA, is trusted without a restart.
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
		return nil, "", fmt.Errorf("tls for %s: %w", RedactURL(u), err)
	}
	if c.CAFile != "" && !cfg.InsecureSkipVerify {
		// The roots NewTLSConfig read (checking the file) are replaced by
		// the file's content at each connection.
		name := c.ServerName
		if name == "" {
			name = u.Hostname()
		}
		tlsConfig.InsecureSkipVerify = true // VerifyConnection verifies.
		tlsConfig.VerifyConnection = func(cs tls.ConnectionState) error {
			return verifyWithCAFile(c.CAFile, name, cs.PeerCertificates)
		}
	}
	tr := newTransport()
	tr.TLSClientConfig = tlsConfig
	return &http.Client{Transport: tr}, mode, nil
}

// verifyWithCAFile verifies the certificate chain a server presented,
// for name, with the CAs of caFile, as crypto/tls verifies it with roots.
func verifyWithCAFile(caFile, name string, chain []*x509.Certificate) error {
	if len(chain) == 0 {
		return errors.New("verify server certificate: none presented")
	}
	b, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("verify server certificate: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(b) {
		return fmt.Errorf("verify server certificate: %s holds no PEM certificate", caFile)
	}
	intermediates := x509.NewCertPool()
	for _, c := range chain[1:] {
		intermediates.AddCert(c)
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{DNSName: name, Roots: roots, Intermediates: intermediates}); err != nil {
		return fmt.Errorf("verify server certificate: %w", err)
	}
	return nil
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
