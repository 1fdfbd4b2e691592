package pyruntime

import (
	"strings"
	"testing"
)

// TestOOMKillsSourceIsTheLoadersFunction holds the one definition the
// Kubernetes engine borrows: the whole function, and nothing after it.
func TestOOMKillsSourceIsTheLoadersFunction(t *testing.T) {
	src := OOMKillsSource()
	if !strings.HasPrefix(src, "def _oom_kills():") || !strings.HasSuffix(src, "    return None\n") {
		t.Fatalf("OOMKillsSource() is not the loader's whole _oom_kills():\n%s", src)
	}
	if strings.Contains(src, "\ndef ") {
		t.Fatalf("OOMKillsSource() runs into the next definition:\n%s", src)
	}
	if !strings.Contains(Loader(), src) {
		t.Fatal("OOMKillsSource() is not part of loader.py")
	}
}
