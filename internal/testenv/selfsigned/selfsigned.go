// Package selfsigned is for tests only: a self-signed server certificate
// (or one of a peer, for servers and clients) and its key, PEM encoded,
// valid for a day.
package selfsigned

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Cert returns a self-signed certificate for names and its key, PEM
// encoded.
func Cert(t testing.TB, names ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	return cert(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, names)
}

// PeerCert returns a self-signed certificate for names and its key, PEM
// encoded, that serves and authenticates clients alike: mutual TLS
// between peers that present it and trust it as their CA.
func PeerCert(t testing.TB, names ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	return cert(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, names)
}

func cert(t testing.TB, usages []x509.ExtKeyUsage, names []string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usages,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	k, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: k})
}
