package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/codebridge/codebridge/internal/testcert"
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
	ca := testcert.New(t, nil, func(c *x509.Certificate) {
		c.IsCA, c.BasicConstraintsValid = true, true
		c.KeyUsage = x509.KeyUsageCertSign
	})
	server := testcert.New(t, ca, func(c *x509.Certificate) {
		c.IPAddresses = []net.IP{net.ParseIP(host)}
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	})
	client := testcert.New(t, ca, func(c *x509.Certificate) {
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
	dir := t.TempDir()
	ca.WriteCert(t, filepath.Join(dir, "ca.pem"))
	client.WriteCert(t, filepath.Join(dir, "cert.pem"))
	client.WriteKey(t, filepath.Join(dir, "key.pem"))

	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	cfg := &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{server.Cert.Raw}, PrivateKey: server.Key}},
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
