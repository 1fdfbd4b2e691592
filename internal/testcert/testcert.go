// Package testcert makes certificates for tests: a self-signed one, or a
// small CA and the certificates it signs, written as PEM files where the
// code under test reads them. Keys are ECDSA P-256; certificates are valid
// from an hour ago to an hour from now.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"testing"
	"time"
)

// Cert is a certificate and its key.
type Cert struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// New makes a certificate shaped by edit, signed by parent, or
// self-signed when parent is nil.
func New(t testing.TB, parent *Cert, edit func(*x509.Certificate)) *Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "codebridge test " + serial.String()},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	edit(tmpl)
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &Cert{Cert: cert, Key: key}
}

// WriteCert writes the certificate to path as PEM.
func (c *Cert) WriteCert(t testing.TB, path string) {
	t.Helper()
	writePEM(t, path, "CERTIFICATE", c.Cert.Raw)
}

// WriteKey writes the key to path as PEM.
func (c *Cert) WriteKey(t testing.TB, path string) {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(c.Key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, path, "EC PRIVATE KEY", der)
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
