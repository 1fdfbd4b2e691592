package engine

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// The seccomp profile every sandbox container gets. It starts from Moby's
// default profile (an allow-list: every system call it does not name fails
// with EPERM), a copy of github.com/moby/profiles/seccomp's default.json
// at the version go.mod pins (Apache-2.0, Copyright The Moby Authors), and
// is then narrowed for a container that has no capabilities at all:
//
//   - rules that apply only with a capability are dropped, and exclusions
//     by capability are resolved, so the profile means the same on every
//     engine whatever it does with "includes"/"excludes";
//   - the calls in [seccompDenied] are refused with EPERM by an explicit
//     rule and allowed by none (ptrace and process_vm_* are in Moby's
//     default for kernels from 4.8 on);
//   - clone3 always fails with ENOSYS, so that libc falls back to clone,
//     whose namespace flags the profile can inspect (and refuses).
//
// docs/SECURITY.md explains the choice of an allow-list.
//
//go:embed seccomp_default.json
var mobyDefaultProfile []byte

// seccompDenied are the system calls no sandboxed Python needs and that are
// the usual first steps of kernel exploits or of reaching other processes.
var seccompDenied = []string{
	"unshare", "setns", "ptrace", "process_vm_readv", "process_vm_writev",
	"kcmp", "pidfd_getfd", "process_madvise",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"mount", "umount2", "fsopen", "fsmount", "fspick", "move_mount", "open_tree", "pivot_root",
	"open_by_handle_at", "kexec_load", "kexec_file_load", "init_module", "finit_module",
}

const (
	errnoEPERM  = 1
	errnoENOSYS = 38
)

var seccompOnce = sync.OnceValues(buildSeccompProfile)

// SeccompProfile returns codebridge's seccomp profile as JSON, in the
// format Docker and Podman read.
func SeccompProfile() ([]byte, error) { return seccompOnce() }

func buildSeccompProfile() ([]byte, error) {
	var p seccomp.Seccomp
	if err := json.Unmarshal(mobyDefaultProfile, &p); err != nil {
		return nil, fmt.Errorf("sandbox: the embedded seccomp profile does not parse: %w", err)
	}
	var rules []*seccomp.Syscall
	for _, r := range p.Syscalls {
		if r.Includes != nil && len(r.Includes.Caps) > 0 {
			continue // never applies: the container has no capabilities
		}
		if r.Excludes != nil && len(r.Excludes.Caps) > 0 {
			r.Excludes.Caps = nil // always applies, for the same reason
			if len(r.Excludes.Arches) == 0 && r.Excludes.MinKernel == nil {
				r.Excludes = nil
			}
		}
		r.Names = slices.DeleteFunc(r.Names, func(n string) bool {
			return n == "clone3" || slices.Contains(seccompDenied, n)
		})
		if len(r.Names) > 0 {
			rules = append(rules, r)
		}
	}
	eperm, enosys := uint(errnoEPERM), uint(errnoENOSYS)
	rules = append(rules,
		&seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{Names: seccompDenied, Action: specs.ActErrno, ErrnoRet: &eperm},
			Comment: "codebridge: namespaces, tracing, keyrings, bpf and other calls no sandboxed Python needs"},
		&seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys},
			Comment: "codebridge: ENOSYS makes libc fall back to clone, whose flags the profile checks"},
	)
	p.Syscalls = rules
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&p); err != nil {
		return nil, fmt.Errorf("sandbox: encoding the seccomp profile: %w", err)
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}
