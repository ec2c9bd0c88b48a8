package reloader

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// writeCert writes a self-signed certificate (its own CA) for cn and its key
// to dir, and returns the files' paths.
func writeCert(t *testing.T, dir, cn string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{cn},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, cn+".crt"), filepath.Join(dir, cn+".key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	return certFile, keyFile
}

// TestTLSClient reloads through HTTPS servers with httptest's self-signed
// certificate (valid for example.com, 127.0.0.1 and ::1). Hosts other than
// loopback ones are dialled at the server's address.
func TestTLSClient(t *testing.T) {
	dir := t.TempDir()
	clientCert, clientKey := writeCert(t, dir, "reloader")
	otherCA, _ := writeCert(t, dir, "other-ca")

	var gotClient string // CN of the client certificate the last request presented
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotClient = ""
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			gotClient = r.TLS.PeerCertificates[0].Subject.CommonName
		}
	})
	srv := httptest.NewTLSServer(handler)
	defer srv.Close()
	pool := x509.NewCertPool()
	b, err := os.ReadFile(clientCert)
	require.NoError(t, err)
	require.True(t, pool.AppendCertsFromPEM(b))
	mtls := httptest.NewUnstartedServer(handler)
	mtls.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	mtls.StartTLS()
	defer mtls.Close()
	serverCA := filepath.Join(dir, "server-ca.crt")
	require.NoError(t, os.WriteFile(serverCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))

	for _, tc := range []struct {
		name       string
		srv        *httptest.Server
		host       string // replaces the server URL's host; dialled at the server's address
		tls        TLS
		mode       string
		err        string // in the reload's error; empty for success
		clientSeen string
	}{
		{name: "loopback self-signed, no flags", srv: srv,
			mode: "server certificate not verified: loopback host and no CA file"},
		{name: "localhost self-signed, no flags", srv: srv, host: "localhost",
			mode: "server certificate not verified: loopback host and no CA file"},
		{name: "127.0.0.2 is loopback", srv: srv, host: "127.0.0.2",
			mode: "server certificate not verified: loopback host and no CA file"},
		{name: "other host verified by default", srv: srv, host: "example.com",
			mode: "server certificate verified with the system's roots", err: "certificate signed by unknown authority"},
		{name: "CA file makes it verify", srv: srv, host: "example.com", tls: TLS{CAFile: serverCA},
			mode: "server certificate verified with CA file " + serverCA},
		{name: "CA file on loopback", srv: srv, tls: TLS{CAFile: serverCA},
			mode: "server certificate verified with CA file " + serverCA},
		{name: "CA file of another CA on loopback", srv: srv, tls: TLS{CAFile: otherCA},
			mode: "server certificate verified with CA file " + otherCA, err: "certificate signed by unknown authority"},
		{name: "server name", srv: srv, host: "prometheus.monitoring.svc", tls: TLS{CAFile: serverCA, ServerName: "example.com"},
			mode: "server certificate verified with CA file " + serverCA},
		{name: "server name mismatch", srv: srv, tls: TLS{CAFile: serverCA, ServerName: "prometheus.monitoring.svc"},
			mode: "server certificate verified with CA file " + serverCA, err: "not prometheus.monitoring.svc"},
		{name: "insecure skip verify", srv: srv, host: "prometheus.monitoring.svc", tls: TLS{InsecureSkipVerify: true},
			mode: "server certificate not verified: insecure skip verify"},
		{name: "client certificate required, none given", srv: mtls,
			mode: "server certificate not verified: loopback host and no CA file", err: "certificate required"},
		{name: "client certificate presented", srv: mtls, tls: TLS{CertFile: clientCert, KeyFile: clientKey},
			mode: "server certificate not verified: loopback host and no CA file, client certificate " + clientCert, clientSeen: "reloader"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := mustURL(t, tc.srv.URL+"/-/reload")
			if tc.host != "" {
				u.Host = net.JoinHostPort(tc.host, u.Port())
			}
			client, mode, err := tc.tls.Client(u)
			require.NoError(t, err)
			require.Equal(t, tc.mode, mode)
			addr := tc.srv.Listener.Addr().String()
			client.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}
			gotClient = ""
			err = (&HTTPTrigger{URL: u, Client: client, Timeout: 5 * time.Second}).Reload(t.Context())
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.clientSeen, gotClient)
		})
	}
}

// TestTLSClientRenewedCA changes the CA file between two reloads through
// the same client: the file is read at each connection, so the CA of a
// renewed certificate is trusted without a restart.
func TestTLSClientRenewedCA(t *testing.T) {
	dir := t.TempDir()
	other, _ := writeCert(t, dir, "other-ca")
	otherPEM, err := os.ReadFile(other)
	require.NoError(t, err)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	caFile := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(caFile, otherPEM, 0o600))
	u := mustURL(t, srv.URL+"/-/reload")
	client, _, err := TLS{CAFile: caFile}.Client(u)
	require.NoError(t, err)
	trigger := &HTTPTrigger{URL: u, Client: client, Timeout: 5 * time.Second}
	require.ErrorContains(t, trigger.Reload(t.Context()), "verify server certificate: x509: certificate signed by unknown authority")

	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	require.NoError(t, trigger.Reload(t.Context()), "the new CA is read")
	require.NoError(t, os.WriteFile(caFile, []byte("not PEM"), 0o600))
	require.ErrorContains(t, trigger.Reload(t.Context()), "verify server certificate: "+caFile+" holds no PEM certificate")
}

func TestTLSClientErrors(t *testing.T) {
	dir := t.TempDir()
	cert, _ := writeCert(t, dir, "reloader")
	for _, tc := range []struct {
		name string
		tls  TLS
		err  string
	}{
		{"certificate without key", TLS{CertFile: cert},
			"tls for https://127.0.0.1:9090/-/reload: exactly one of key or key_file must be configured when a client certificate is configured"},
		{"missing CA file", TLS{CAFile: filepath.Join(dir, "nope.crt")},
			"tls for https://127.0.0.1:9090/-/reload: unable to read CA cert: unable to read file " + filepath.Join(dir, "nope.crt")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tc.tls.Client(mustURL(t, "https://127.0.0.1:9090/-/reload"))
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), tc.err), err.Error())
		})
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost": true, "localhost.": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true,
		"10.0.0.1": false, "prometheus": false, "localhost.example.com": false, "::": false, "": false, "128.0.0.1": false,
	} {
		require.Equal(t, want, isLoopback(host), host)
	}
}
