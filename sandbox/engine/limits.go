package engine

import (
	"fmt"
	"regexp"
)

// Limits are the resource limits of the sandbox container.
type Limits struct {
	// Memory is the memory limit in bytes (swap is disabled by giving the
	// same value as the memory+swap limit). Zero means [DefaultMemory].
	Memory int64
	// Pids bounds the number of processes and threads. Zero means [DefaultPids].
	Pids int64
	// CPUs is the number of CPUs the container may use. Zero means [DefaultCPUs].
	CPUs float64
	// NoFile is the open-files ulimit. Zero means [DefaultNoFile].
	NoFile int64
	// TmpSize is the size of each tmpfs mount (/tmp, /workspace) in bytes.
	// Zero means [DefaultTmpSize].
	TmpSize int64
	// Runtime is the engine's OCI runtime for the container (for example
	// "runsc" for gVisor or "kata" for Kata Containers), which must be
	// registered with the engine. Empty means the engine's default.
	Runtime string
}

// Defaults of [Limits], stated once: 512 MiB of memory, 128 processes and
// threads, one CPU, 1024 open files and 256 MiB per tmpfs mount.
const (
	DefaultMemory  = 512 << 20
	DefaultPids    = 128
	DefaultCPUs    = 1
	DefaultNoFile  = 1024
	DefaultTmpSize = 256 << 20
)

// WithDefaults returns the limits with each zero value replaced by its
// default.
func (l Limits) WithDefaults() Limits {
	if l.Memory == 0 {
		l.Memory = DefaultMemory
	}
	if l.Pids == 0 {
		l.Pids = DefaultPids
	}
	if l.CPUs == 0 {
		l.CPUs = DefaultCPUs
	}
	if l.NoFile == 0 {
		l.NoFile = DefaultNoFile
	}
	if l.TmpSize == 0 {
		l.TmpSize = DefaultTmpSize
	}
	return l
}

// SizeText writes a byte count the way limits are usually given: "512 MiB".
func SizeText(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// DefaultUser is the uid:gid the code runs as when none is configured
// ([ContainerSpec.User]): nobody, never root.
const DefaultUser = "65534:65534"

// runtimeName is what an OCI runtime's name may look like: one word, never
// an option of the engine's command line.
var runtimeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)

// Validate says what is wrong with the limits, or is nil. Zero values mean
// the defaults; negative ones and a runtime name that is not one word are
// refused.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"memory limit", float64(l.Memory)}, {"process limit", float64(l.Pids)}, {"CPU limit", l.CPUs},
		{"open-files limit", float64(l.NoFile)}, {"tmpfs size", float64(l.TmpSize)}} {
		if f.v < 0 {
			return fmt.Errorf("the sandbox's %s is negative (%v): give a positive value, or 0 for the default", f.name, f.v)
		}
	}
	if l.Runtime != "" {
		return CheckRuntime(l.Runtime)
	}
	return nil
}

// CheckRuntime says why name cannot be an OCI runtime's name, or is nil.
func CheckRuntime(name string) error {
	if !runtimeName.MatchString(name) {
		return fmt.Errorf("%q is not a runtime name: give the name the engine knows, such as runsc", name)
	}
	return nil
}
