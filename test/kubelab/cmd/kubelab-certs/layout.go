package main

import (
	"fmt"
	"net"
)

// clients are the identities that reach the apiserver with a kubeconfig:
// the file name of each kubeconfig and the subject its certificate carries.
// Kubernetes reads the user from the common name and the groups from the
// organizations; system:masters is cluster-admin, the rest are the
// identities the default RBAC roles (and the Node authorizer) expect.
func clients(node string) []leaf {
	return []leaf{
		{file: "admin", cn: "kubelab-admin", orgs: []string{"system:masters"}},
		{file: "kubelet", cn: "system:node:" + node, orgs: []string{"system:nodes"}},
		{file: "controller-manager", cn: "system:kube-controller-manager"},
		{file: "scheduler", cn: "system:kube-scheduler"},
	}
}

// servers are the serving certificates, and the apiserver's own client
// certificates (to etcd, to the kubelet).
func servers(node string, ips []net.IP) []leaf {
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	return []leaf{
		{file: "etcd-server", cn: "kubelab-etcd", server: true, dns: []string{"localhost"}, ips: loopback},
		{file: "apiserver-etcd-client", cn: "kube-apiserver-etcd-client"},
		{file: "apiserver", cn: "kube-apiserver", server: true, ips: ips, dns: []string{
			"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"}},
		{file: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}},
		{file: "kubelet-server", cn: node, server: true, dns: []string{node, "localhost"}, ips: ips},
	}
}

// writeAll writes the CA, every leaf, the service-account key and the
// kubeconfigs into dir.
func writeAll(dir, node, server string, ips []net.IP) error {
	ca, err := newAuthority(dir, "ca")
	if err != nil {
		return fmt.Errorf("make the CA: %w", err)
	}
	for _, l := range append(servers(node, ips), clients(node)...) {
		if err := ca.issue(dir, l); err != nil {
			return err
		}
	}
	if err := writeServiceAccountKey(dir); err != nil {
		return fmt.Errorf("make the service-account key: %w", err)
	}
	for _, l := range clients(node) {
		if err := writeKubeconfig(dir, l.file, server); err != nil {
			return fmt.Errorf("write the %s kubeconfig: %w", l.file, err)
		}
	}
	return nil
}
