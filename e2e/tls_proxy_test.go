package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// engineTLS puts a TLS front on the plain engine at backend, listening on
// listen (an address the test made), as Docker's TLS port does: the
// engine's certificate is for listen's IP, and a client must show a
// certificate of the same test CA. It returns the directory of the
// client's files as DOCKER_CERT_PATH wants them (ca.pem, cert.pem,
// key.pem).
func engineTLS(t *testing.T, listen, backend string) string {
	t.Helper()
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		t.Fatal(err)
	}
	ca, caKey := newCert(t, nil, nil, func(c *x509.Certificate) {
		c.IsCA, c.BasicConstraintsValid = true, true
		c.KeyUsage = x509.KeyUsageCertSign
	})
	server, serverKey := newCert(t, ca, caKey, func(c *x509.Certificate) {
		c.IPAddresses = []net.IP{net.ParseIP(host)}
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	})
	client, clientKey := newCert(t, ca, caKey, func(c *x509.Certificate) {
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
	dir := t.TempDir()
	writePEM(t, filepath.Join(dir, "ca.pem"), "CERTIFICATE", ca.Raw)
	writePEM(t, filepath.Join(dir, "cert.pem"), "CERTIFICATE", client.Raw)
	keyDER, err := x509.MarshalECPrivateKey(clientKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, "key.pem"), "EC PRIVATE KEY", keyDER)

	pool := x509.NewCertPool()
	pool.AddCert(ca)
	cfg := &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{server.Raw}, PrivateKey: serverKey}},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	}
	l, err := tls.Listen("tcp", listen, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { relay(c, backend) })
		}
	})
	return dir
}

// relay copies between a client's TLS connection and the engine, each
// direction closed for writing when its source ends (an attach half-closes).
func relay(c net.Conn, backend string) {
	defer c.Close()
	b, err := net.Dial("tcp", backend)
	if err != nil {
		return
	}
	defer b.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(b, c)
		_ = b.(*net.TCPConn).CloseWrite()
		close(done)
	}()
	_, _ = io.Copy(c, b)
	if tc, ok := c.(*tls.Conn); ok {
		_ = tc.CloseWrite()
	}
	<-done
}

// newCert makes a certificate signed by parent (self-signed when nil),
// shaped by edit.
func newCert(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, edit func(*x509.Certificate)) (*x509.Certificate, *ecdsa.PrivateKey) {
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
		Subject:      pkix.Name{CommonName: "codebridge e2e " + serial.String()},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	edit(tmpl)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
