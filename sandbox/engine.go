package sandbox

import (
	"context"
	"fmt"

	"github.com/codebridge/codebridge/sandbox/engine"
	"github.com/codebridge/codebridge/sandbox/engine/kube"
	"github.com/codebridge/codebridge/sandbox/engine/moby"
)

// The border to the container engines is package engine; the engines are
// packages engine/moby (Docker, and Podman's Docker-compatible service)
// and engine/kube (Kubernetes). These aliases keep the names this
// package's callers know.
type (
	// Engine is a container engine that can run the sandbox.
	Engine = engine.Engine
	// Container is one running sandbox container.
	Container = engine.Container
	// ContainerSpec is what an [Engine] needs to start the sandbox container.
	ContainerSpec = engine.ContainerSpec
	// ContainerInfo describes a container codebridge made.
	ContainerInfo = engine.ContainerInfo
	// Limits are the resource limits of the sandbox container.
	Limits = engine.Limits
	// Mount is a host directory (bind) or an engine volume in the sandbox.
	Mount = engine.Mount
	// WorkspaceVolume is one workspace volume codebridge created on an engine.
	WorkspaceVolume = engine.WorkspaceVolume
	// EngineOptions say which container engine to use, and how.
	EngineOptions = engine.Options
	// EngineCheck is one finding of an engine's own checks, for doctor.
	EngineCheck = engine.Check
	// CheckedEngine is an engine that checks what its sandboxes' promises
	// depend on outside codebridge.
	CheckedEngine = engine.Checker
)

// Labels and paths of the border to the engines (see package engine).
const (
	LabelKey       = engine.LabelKey
	LabelHost      = engine.LabelHost
	LabelPID       = engine.LabelPID
	LabelStart     = engine.LabelStart
	LabelWorkspace = engine.LabelWorkspace
	LabelProject   = engine.LabelProject
	LabelPrincipal = engine.LabelPrincipal
	WorkspacePath  = engine.WorkspacePath
	ChannelDir     = engine.ChannelDir
)

// Defaults of [Limits], of the sandbox's user and of a workspace's size,
// as package engine states them.
const (
	DefaultMemory        = engine.DefaultMemory
	DefaultPids          = engine.DefaultPids
	DefaultCPUs          = engine.DefaultCPUs
	DefaultNoFile        = engine.DefaultNoFile
	DefaultTmpSize       = engine.DefaultTmpSize
	DefaultUser          = engine.DefaultUser
	DefaultWorkspaceSize = engine.DefaultWorkspaceSize
)

// ErrNotWorkspace is the error of removing a volume codebridge did not
// create.
var ErrNotWorkspace = engine.ErrNotWorkspace

// DefaultImage is the image used when none is configured: an official slim
// Python image. Where no registry is reachable, build one from Debian
// packages with `codebridge image build` and set CODEBRIDGE_IMAGE.
const DefaultImage = "docker.io/library/python:3.12-slim"

// CheckRuntime says why name cannot be an OCI runtime's name, or is nil.
func CheckRuntime(name string) error { return engine.CheckRuntime(name) }

// SeccompProfile returns codebridge's seccomp profile as JSON, in the
// format Docker and Podman read.
func SeccompProfile() ([]byte, error) { return engine.SeccompProfile() }

// EngineKubernetes is the engine kind that runs sandboxes as Pods. The
// engine is compiled in only with the build tag kubernetes
// ([KubernetesBuilt]): client-go costs every bridge about 6 MB of idle
// memory, which a bridge that does not use Kubernetes should not pay.
const EngineKubernetes = "kubernetes"

// What package engine/kube says of itself in both builds.
const (
	// KubernetesBuilt says whether this build has the kubernetes engine.
	KubernetesBuilt = kube.Built
	// KubernetesInstall is the command that installs a codebridge with
	// the Kubernetes engine compiled in.
	KubernetesInstall = kube.Install
	// DefaultSeccompLocalhost is the seccomp profile of a sandbox Pod
	// when none is configured.
	DefaultSeccompLocalhost = kube.DefaultSeccompLocalhost
	// SeccompRuntimeDefault, given as the profile, runs sandbox Pods with
	// the container runtime's own profile.
	SeccompRuntimeDefault = kube.SeccompRuntimeDefault
	// LabelPod and LabelPodUID name the bridge's Pod on the sandbox Pods
	// a bridge running in a Pod made.
	LabelPod    = kube.LabelPod
	LabelPodUID = kube.LabelPodUID
)

// ErrKubernetesNotBuilt is the refusal of the kubernetes engine by a
// build without it.
var ErrKubernetesNotBuilt = kube.ErrNotBuilt

// Connect finds a container engine and returns a connection to it: with
// Kind "kubernetes" the kubernetes engine ([kube.Connect]), otherwise a
// Docker Engine API engine ([moby.Connect], which says how Kind "auto"
// looks for one).
func Connect(ctx context.Context, opts EngineOptions) (Engine, error) {
	opts = opts.WithDefaults()
	switch opts.Kind {
	case EngineKubernetes:
		return kube.Connect(ctx, opts)
	case "auto", "podman", "docker":
		return moby.Connect(ctx, opts)
	}
	return nil, fmt.Errorf("sandbox: unknown engine %q: use auto, podman, docker or kubernetes", opts.Kind)
}

// clipText cuts s to n bytes for a log line ([engine.ClipText]).
func clipText(s string, n int) string { return engine.ClipText(s, n) }

// sizeText writes a byte count as limits are given ([engine.SizeText]).
func sizeText(n int64) string { return engine.SizeText(n) }
