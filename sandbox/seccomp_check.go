package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// hardeningProbe reports, from inside the sandbox, whether a seccomp
// filter applies, whether code can create a user namespace, and whether
// it can reach the init's descriptors.
const hardeningProbe = `import ctypes, errno, os
mode = [l.split()[1] for l in open("/proc/self/status") if l.startswith("Seccomp:")]
print("seccomp", mode[0] if mode else "unknown")
r = ctypes.CDLL(None, use_errno=True).unshare(0x10000000)
print("userns", "open" if r == 0 else errno.errorcode.get(ctypes.get_errno(), "refused"))
print("init", "open" if os.access("/proc/1/fd", os.R_OK) else "closed")`

// CheckHardening runs a probe in the session's sandbox and reports whether
// codebridge's seccomp profile and the init's protection apply there. The
// error says what does not, and what to do.
func (s *Session) CheckHardening(ctx context.Context) (string, error) {
	res, err := s.Run(ctx, Request{Code: hardeningProbe, Timeout: 30 * time.Second})
	if err != nil {
		return "", err
	}
	if res.Status != StatusOK {
		return "", fmt.Errorf("the probe failed: %s%s", res.Traceback, res.Notice)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout.Text), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			got[k] = v
		}
	}
	var problems []string
	if got["seccomp"] != "2" {
		problems = append(problems, "no seccomp filter applies (the engine runs without seccomp)")
	}
	if got["userns"] != "EPERM" {
		problems = append(problems, "code can create user namespaces (the engine could not load codebridge's profile: "+
			"a remote Podman or a Podman machine cannot read it; use a local engine, or Docker)")
	}
	if got["init"] != "closed" {
		problems = append(problems, "code can reach the init's descriptors (the image's python3 lacks ctypes)")
	}
	if len(problems) > 0 {
		return "", errors.New(strings.Join(problems, "; "))
	}
	return "codebridge's seccomp profile applies (user namespaces, ptrace, keyctl, bpf refused); the init is out of reach", nil
}
