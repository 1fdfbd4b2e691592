package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// validity is how long every lab certificate lasts: far longer than any lab
// cluster lives, short enough that a forgotten one expires.
const validity = 30 * 24 * time.Hour

// authority is a certificate authority that signs the lab's leaf
// certificates.
type authority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// leaf describes one certificate to issue: its subject, what it may be used
// for, and for a serving certificate the names and addresses it serves.
type leaf struct {
	file   string
	cn     string
	orgs   []string
	server bool
	dns    []string
	ips    []net.IP
}

// newKey makes a P-256 key.
func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// serial returns a random 128-bit certificate serial number.
func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

// newAuthority makes a self-signed CA and writes it as NAME.crt and NAME.key.
func newAuthority(dir, name string) (*authority, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: "kubelab-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	if err := writePair(dir, name, der, key); err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key}, nil
}

// issue signs the leaf l and writes it as l.file.crt and l.file.key.
func (a *authority) issue(dir string, l leaf) error {
	key, err := newKey()
	if err != nil {
		return err
	}
	sn, err := serial()
	if err != nil {
		return err
	}
	now := time.Now()
	usage := x509.ExtKeyUsageClientAuth
	if l.server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: l.cn, Organization: l.orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     l.dns,
		IPAddresses:  l.ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return fmt.Errorf("sign %s: %w", l.file, err)
	}
	return writePair(dir, l.file, der, key)
}

// writePair writes a certificate and its key as PEM files.
func writePair(dir, name string, der []byte, key *ecdsa.PrivateKey) error {
	if err := writePEM(filepath.Join(dir, name+".crt"), "CERTIFICATE", der); err != nil {
		return err
	}
	return writeKey(filepath.Join(dir, name+".key"), key)
}

// writeKey writes a private key as PKCS #8 PEM, readable by its owner only.
func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der)
}

// writePEM writes one PEM block to path, readable by its owner only.
func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

// writeServiceAccountKey writes the key pair the apiserver signs
// service-account tokens with (sa.key) and verifies them with (sa.pub).
func writeServiceAccountKey(dir string) error {
	key, err := newKey()
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, "sa.key"), key); err != nil {
		return err
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, "sa.pub"), "PUBLIC KEY", der)
}
