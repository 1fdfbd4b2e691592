package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
)

// kubeconfigTemplate is a kubeconfig with one cluster, one user and one
// context, every credential embedded so the file can be copied anywhere.
// Fields in order: server, CA, client certificate, client key.
const kubeconfigTemplate = `apiVersion: v1
kind: Config
clusters:
- name: kubelab
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: kubelab
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: kubelab
  context:
    cluster: kubelab
    user: kubelab
current-context: kubelab
`

// writeKubeconfig writes NAME.kubeconfig from ca.crt, NAME.crt and NAME.key
// in dir.
func writeKubeconfig(dir, name, server string) error {
	var data [3]string
	for i, file := range []string{"ca.crt", name + ".crt", name + ".key"} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return err
		}
		data[i] = base64.StdEncoding.EncodeToString(b)
	}
	text := fmt.Sprintf(kubeconfigTemplate, server, data[0], data[1], data[2])
	return os.WriteFile(filepath.Join(dir, name+".kubeconfig"), []byte(text), 0o600)
}
