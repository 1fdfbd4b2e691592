package engine

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestSeccompProfileDeniesWhatItPromises checks the profile's own text: no
// rule lets a denied call (or clone3) through, no rule depends on a
// capability, and the explicit refusals carry the errno the tests expect.
func TestSeccompProfileDeniesWhatItPromises(t *testing.T) {
	raw, err := SeccompProfile()
	if err != nil {
		t.Fatal(err)
	}
	var p seccomp.Seccomp
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("the profile is not JSON an engine reads: %v", err)
	}
	if p.DefaultAction != specs.ActErrno {
		t.Fatalf("default action %q, want an allow-list (SCMP_ACT_ERRNO)", p.DefaultAction)
	}
	refused := map[string]uint{}
	for _, r := range p.Syscalls {
		if (r.Includes != nil && len(r.Includes.Caps) > 0) || (r.Excludes != nil && len(r.Excludes.Caps) > 0) {
			t.Errorf("rule %v depends on capabilities", r.Names)
		}
		for _, n := range r.Names {
			denied := n == "clone3" || slices.Contains(seccompDenied, n)
			if denied && r.Action != specs.ActErrno {
				t.Errorf("%s is allowed by a rule (%s)", n, r.Action)
			}
			if r.Action == specs.ActErrno && r.ErrnoRet != nil {
				refused[n] = *r.ErrnoRet
			}
		}
	}
	for _, n := range append([]string{"unshare", "ptrace", "keyctl", "bpf", "userfaultfd", "perf_event_open"}, seccompDenied...) {
		if refused[n] != errnoEPERM {
			t.Errorf("%s: errno %d, want EPERM", n, refused[n])
		}
	}
	if refused["clone3"] != errnoENOSYS {
		t.Errorf("clone3: errno %d, want ENOSYS", refused["clone3"])
	}
	for _, n := range []string{"read", "write", "clone", "execve", "wait4", "futex", "mmap", "socketpair"} {
		if _, ok := refused[n]; ok {
			t.Errorf("%s is refused: ordinary Python needs it", n)
		}
	}
}
