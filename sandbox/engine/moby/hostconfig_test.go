package moby

import (
	"strings"
	"testing"

	"github.com/codebridge/codebridge/sandbox/engine"
)

// TestHostConfigSizesEveryWritableMount checks that every tmpfs the
// container gets has a size, and that the OCI runtime setting reaches the
// engine.
func TestHostConfigSizesEveryWritableMount(t *testing.T) {
	hc := hostConfig(engine.Limits{Runtime: "runsc"})
	for _, m := range []string{"/tmp", "/workspace", "/var/tmp", "/run"} {
		if !strings.Contains(hc.Tmpfs[m], "size=") {
			t.Errorf("tmpfs %s has no size: %q", m, hc.Tmpfs[m])
		}
	}
	if hc.ShmSize <= 0 {
		t.Error("/dev/shm has no size")
	}
	if hc.Runtime != "runsc" {
		t.Errorf("runtime %q, want runsc", hc.Runtime)
	}
}
