// Command kubelab-certs writes the lab cluster's credentials into a
// directory: a certificate authority, the serving certificates of etcd, the
// apiserver and the kubelet, the client certificates each component presents,
// the service-account signing key, and one kubeconfig per client (admin,
// kubelet, controller-manager, scheduler) with everything embedded.
//
// Usage:
//
//	kubelab-certs -dir DIR -node NAME -node-ip IP -server URL
//
// It refuses a directory that already holds a CA: the lab's up starts from a
// fresh state directory, and overwriting the credentials of a running
// cluster would lock its components out.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

func main() {
	dir := flag.String("dir", "", "directory to write the credentials into (created)")
	node := flag.String("node", "kubelab-node", "the node's name (the kubelet's identity and a serving name)")
	nodeIP := flag.String("node-ip", "", "the node's address, put in the serving certificates")
	server := flag.String("server", "https://127.0.0.1:6443", "the apiserver's URL, written into every kubeconfig")
	serviceIP := flag.String("service-ip", "10.96.0.1", "the kubernetes Service's cluster IP, put in the apiserver's certificate")
	flag.Parse()
	if err := run(*dir, *node, *nodeIP, *server, *serviceIP); err != nil {
		fmt.Fprintln(os.Stderr, "kubelab-certs:", err)
		os.Exit(1)
	}
}

// run checks the flags and writes every credential.
func run(dir, node, nodeIP, server, serviceIP string) error {
	if dir == "" {
		return fmt.Errorf("-dir is required")
	}
	ips := []net.IP{net.ParseIP("127.0.0.1")}
	for _, s := range []string{nodeIP, serviceIP} {
		if s == "" {
			continue
		}
		ip := net.ParseIP(s)
		if ip == nil {
			return fmt.Errorf("%q is not an IP address", s)
		}
		ips = append(ips, ip)
	}
	if _, err := os.Stat(filepath.Join(dir, "ca.crt")); err == nil {
		return fmt.Errorf("%s already holds a CA; run down first", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return writeAll(dir, node, server, ips)
}
