package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/moby/moby/client"
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

// seccompProfileFile writes the profile to a file only the current user
// can change, named by its content, and returns its path. Podman's API
// reads `seccomp=` as a path on the engine's host (Docker's reads the JSON
// itself), so this is how a local Podman gets the profile.
func seccompProfileFile(profile []byte) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "codebridge")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("sandbox: making %s for the seccomp profile: %w", dir, err)
	}
	sum := sha256.Sum256(profile)
	path := filepath.Join(dir, "seccomp-"+hex.EncodeToString(sum[:8])+".json")
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, profile) {
		return path, nil
	}
	tmp, err := os.CreateTemp(dir, ".seccomp-*")
	if err != nil {
		return "", fmt.Errorf("sandbox: writing the seccomp profile: %w", err)
	}
	_, err = tmp.Write(profile)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644) // the engine's service may run as another user
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("sandbox: writing the seccomp profile to %s: %w", path, err)
	}
	return path, nil
}

// seccompOption returns the security option that gives this engine
// codebridge's seccomp profile: the JSON itself for Docker, a path to it
// for Podman, whose API (4.x, 5.x) reads the value as a file name.
func (e *mobyEngine) seccompOption(ctx context.Context) (string, error) {
	e.seccompMu.Lock()
	defer e.seccompMu.Unlock()
	switch e.seccompOpt {
	case seccompEngineDefault:
		return "", nil
	case "":
	default:
		return e.seccompOpt, nil
	}
	profile, err := SeccompProfile()
	if err != nil {
		return "", err
	}
	opt := "seccomp=" + string(profile)
	if e.isPodman(ctx) {
		path, err := seccompProfileFile(profile)
		if err != nil {
			return "", err
		}
		opt = "seccomp=" + path
	}
	e.seccompOpt = opt
	return opt, nil
}

// isPodman reports whether the engine is Podman: found as one, or, for an
// address given as DOCKER_HOST, by the components its version names.
func (e *mobyEngine) isPodman(ctx context.Context) bool {
	if strings.HasPrefix(e.name, "podman") {
		return true // found as Podman; asking costs Podman half a second
	}
	v, err := e.cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return strings.HasPrefix(e.name, "podman")
	}
	for _, c := range v.Components {
		if strings.Contains(strings.ToLower(c.Name), "podman") {
			return true
		}
	}
	return false
}

// seccompUnusable records that the engine could not load the profile (a
// remote Podman, or a Podman machine, cannot read a file on this host): the
// container then runs with the engine's default profile, which `codebridge
// doctor` reports. It returns the option to use from now on.
func (e *mobyEngine) seccompUnusable(err error) string {
	e.seccompMu.Lock()
	defer e.seccompMu.Unlock()
	if e.seccompOpt != seccompEngineDefault {
		e.log.Warn("the engine cannot load codebridge's seccomp profile; the sandbox runs with the engine's default "+
			"profile, which lets code create user namespaces: use a local Podman or Docker engine", "err", err)
	}
	e.seccompOpt = seccompEngineDefault
	return ""
}

// seccompEngineDefault marks an engine that runs containers with its own
// default seccomp profile.
const seccompEngineDefault = "-"

// isSeccompError reports whether a create failed on the seccomp profile.
func isSeccompError(err error) bool {
	return strings.Contains(strings.ToLower(err.Error()), "seccomp")
}
