package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/codebridge/codebridge/bridge"
	"github.com/codebridge/codebridge/internal/imagebuild"
	"github.com/codebridge/codebridge/internal/statedir"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/codebridge/codebridge/upstream"
)

// This file holds the groups of settings of the upstream servers, the
// sandbox, a run, the state directory and the logs; the workspace's,
// the gate's and HTTP's are beside what they configure (workspace.go,
// gate.go, http.go). Each group is one table: flag, variables, default,
// help; each resolves to its package's own configuration type.

// upstreamFlags say which servers there are and how they are called.
type upstreamFlags struct {
	configs     []string
	callTimeout time.Duration
	// roots are directories given to upstreams as roots when the client
	// has none (--root).
	roots []string
}

var upstreamKnobs = []knob[upstreamFlags]{
	{flag: "config", envs: []string{"CODEBRIDGE_CONFIG", "MCP_SERVERS_CONFIG"}, typ: "file", repeat: true,
		usage: "extra mcpServers config files (repeatable; the variables take a " + string(os.PathListSeparator) + "-separated list), read after ~/MCPs/*.json",
		set: func(g *upstreamFlags, v string) error {
			g.configs = append(g.configs, pathList(v)...)
			return nil
		},
		checkFlag: configFileExists},
	{flag: "call-timeout", envs: []string{"CODEBRIDGE_CALL_TIMEOUT"}, def: secondsText(upstream.DefaultCallTimeout), typ: "seconds",
		usage: "time limit of one upstream tool call, in seconds (a server's \"timeout\" overrides it)",
		set:   func(g *upstreamFlags, v string) (err error) { g.callTimeout, err = seconds(v); return }},
	{flag: "root", envs: []string{"CODEBRIDGE_ROOTS"}, typ: "dir", repeat: true,
		usage: "a directory upstream servers get as a root when the MCP client gives none (repeatable; the variable takes a " + string(os.PathListSeparator) + "-separated list)",
		set: func(g *upstreamFlags, v string) error {
			for _, d := range pathList(v) {
				if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
					return fmt.Errorf("%q is not a directory; give an existing directory", d)
				}
				g.roots = append(g.roots, d)
			}
			return nil
		}},
}

// options are the upstream pool's options.
func (g upstreamFlags) upstreamOptions(log *slog.Logger) upstream.Options {
	return upstream.Options{CallTimeout: g.callTimeout, Version: version(), Log: log}
}

// pathList splits a list of paths joined by the system's separator,
// dropping empty items.
func pathList(v string) []string {
	var out []string
	for _, f := range filepath.SplitList(v) {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// sandboxFlags say which engine and image the sandbox uses and how it is
// bounded.
type sandboxFlags struct {
	engine string
	// namespace and seccompLocalhost are the kubernetes engine's (see
	// sandbox.EngineOptions).
	namespace        string
	seccompLocalhost string
	// The kubernetes engine's opt-outs of its checks (see
	// sandbox.EngineOptions).
	allowWeakSeccomp     bool
	allowNoNetworkPolicy bool
	storageClass         string // empty: the cluster's default
	workspaceSize        int64
	image                string // empty: the built image when the engine has it, else the registry image
	limits               sandbox.Limits
	channel              sandbox.ChannelMode
	user                 string
	pip                  []string // the command that runs pip on the host (on-demand packages)
}

var sandboxKnobs = []knob[sandboxFlags]{
	{flag: "engine", envs: []string{"CODEBRIDGE_ENGINE", "MCP_BRIDGE_RUNTIME"}, def: "auto", typ: "name", usage: "container engine: auto, podman, docker or kubernetes (sandboxes as Pods; KUBECONFIG, or in-cluster in a Pod)",
		set: func(g *sandboxFlags, v string) error {
			v = strings.ToLower(v)
			if v != "auto" && v != "podman" && v != "docker" && v != sandbox.EngineKubernetes {
				return fmt.Errorf("%q is not an engine: use auto, podman, docker or kubernetes", v)
			}
			if v == sandbox.EngineKubernetes && !sandbox.KubernetesBuilt {
				return sandbox.ErrKubernetesNotBuilt
			}
			g.engine = v
			return nil
		}},
	{flag: "namespace", envs: []string{"CODEBRIDGE_NAMESPACE"}, typ: "name",
		usage: "Kubernetes namespace of the sandbox Pods (--engine kubernetes); by default the bridge Pod's own, else the kubeconfig context's, else default",
		set:   func(g *sandboxFlags, v string) error { g.namespace = v; return nil }},
	{flag: "seccomp-localhost", envs: []string{"CODEBRIDGE_SECCOMP_LOCALHOST"}, def: sandbox.DefaultSeccompLocalhost, typ: "profile",
		usage: "seccomp profile of the sandbox Pods, installed on the Kubernetes nodes, relative to the kubelet's seccomp directory " +
			"(codebridge image seccomp prints codebridge's; see docs/scale-out.md); " + sandbox.SeccompRuntimeDefault + " means the container runtime's own",
		set: func(g *sandboxFlags, v string) error {
			if strings.HasPrefix(v, "/") || strings.Contains(v, "..") {
				return fmt.Errorf("%q must be a path relative to the kubelet's seccomp directory, such as %s", v, sandbox.DefaultSeccompLocalhost)
			}
			g.seccompLocalhost = v
			return nil
		}},
	{flag: "allow-weak-seccomp", envs: []string{"CODEBRIDGE_ALLOW_WEAK_SECCOMP"}, def: "false", typ: "bool",
		usage: "run sandbox Pods whose seccomp filter lets io_uring, user namespaces, ptrace or keyctl through (--engine kubernetes; each Pod checks at its start, and fails it without this); doctor names it",
		set:   func(g *sandboxFlags, v string) (err error) { g.allowWeakSeccomp, err = parseBool(v); return }},
	{flag: "allow-no-network-policy", envs: []string{"CODEBRIDGE_ALLOW_NO_NETWORK_POLICY"}, def: "false", typ: "bool",
		usage: "start sandbox Pods in a namespace where no NetworkPolicy denies them all ingress and egress (--engine kubernetes; refused without this); doctor names it",
		set:   func(g *sandboxFlags, v string) (err error) { g.allowNoNetworkPolicy, err = parseBool(v); return }},
	{flag: "storage-class", envs: []string{"CODEBRIDGE_STORAGE_CLASS"}, typ: "name",
		usage: "StorageClass of the persistent workspaces' PersistentVolumeClaims (--engine kubernetes); by default the cluster's default class",
		set: func(g *sandboxFlags, v string) error {
			if !storageClassName(v) {
				return fmt.Errorf("%q is not a StorageClass name (lower-case letters, digits, '-' and '.')", v)
			}
			g.storageClass = v
			return nil
		}},
	{flag: "workspace-size", envs: []string{"CODEBRIDGE_WORKSPACE_SIZE"}, def: strconv.Itoa(sandbox.DefaultWorkspaceSize>>30) + "g", typ: "size",
		usage: "size of a persistent workspace's PersistentVolumeClaim (--engine kubernetes), e.g. 1g or 20g",
		set:   func(g *sandboxFlags, v string) (err error) { g.workspaceSize, err = parseBytes(v); return }},
	{flag: "image", envs: []string{"CODEBRIDGE_IMAGE", "MCP_BRIDGE_IMAGE"}, typ: "image",
		usage: "sandbox image (must have python3); by default " + imagebuild.DefaultTag + " (what codebridge image build makes) when the engine has it, else " + sandbox.DefaultImage,
		set:   func(g *sandboxFlags, v string) error { g.image = v; return nil }},
	{flag: "memory", envs: []string{"CODEBRIDGE_MEMORY", "MCP_BRIDGE_MEMORY"}, def: strconv.Itoa(sandbox.DefaultMemory>>20) + "m", typ: "size",
		usage: "sandbox memory limit, e.g. 512m or 2g",
		set:   func(g *sandboxFlags, v string) (err error) { g.limits.Memory, err = parseBytes(v); return }},
	{flag: "pids", envs: []string{"CODEBRIDGE_PIDS", "MCP_BRIDGE_PIDS"}, def: strconv.Itoa(sandbox.DefaultPids), typ: "n", usage: "sandbox process limit",
		set: func(g *sandboxFlags, v string) (err error) { g.limits.Pids, err = positiveInt(v); return }},
	{flag: "cpus", envs: []string{"CODEBRIDGE_CPUS", "MCP_BRIDGE_CPUS"}, def: strconv.Itoa(sandbox.DefaultCPUs), typ: "n", usage: "sandbox CPU limit",
		set: func(g *sandboxFlags, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 {
				return fmt.Errorf("%q is not a positive number of CPUs", v)
			}
			g.limits.CPUs = f
			return nil
		}},
	{flag: "tmp-size", envs: []string{"CODEBRIDGE_TMP_SIZE"}, def: strconv.Itoa(sandbox.DefaultTmpSize>>20) + "m", typ: "size",
		usage: "size of the sandbox's /tmp, and of /workspace when it is ephemeral, e.g. 256m or 1g",
		set:   func(g *sandboxFlags, v string) (err error) { g.limits.TmpSize, err = parseBytes(v); return }},
	{flag: "user", envs: []string{"CODEBRIDGE_USER", "MCP_BRIDGE_CONTAINER_USER"}, def: sandbox.DefaultUser, typ: "uid:gid",
		usage: "user the sandbox code runs as (never root: uid 0 and gid 0 are refused)",
		set: func(g *sandboxFlags, v string) error {
			if err := sandbox.CheckUser(v); err != nil {
				return err
			}
			g.user = v
			return nil
		}},
	{flag: "oci-runtime", envs: []string{"CODEBRIDGE_OCI_RUNTIME"}, typ: "name",
		usage: "OCI runtime for the sandbox, such as runsc (gVisor) or kata; empty means the engine's default",
		set: func(g *sandboxFlags, v string) error {
			if err := sandbox.CheckRuntime(v); err != nil {
				return err
			}
			g.limits.Runtime = v
			return nil
		}},
	{flag: "channel", envs: []string{"CODEBRIDGE_CHANNEL"}, def: string(sandbox.DefaultChannel), typ: "mode",
		usage: "how the sandbox's frames travel: auto (a Unix socket the bridge owns, mounted into that sandbox alone, where the engine runs on this machine; else the engine's attach stream) or attach (always the attach stream)",
		set: func(g *sandboxFlags, v string) (err error) {
			g.channel, err = sandbox.ParseChannelMode(strings.ToLower(v))
			return
		}},
	{flag: "pip", envs: []string{"CODEBRIDGE_PIP"}, def: "python3 -m pip", typ: "command",
		usage: "the command that runs pip on the host, for runtime.install (packages on demand)",
		set: func(g *sandboxFlags, v string) error {
			g.pip = strings.Fields(v)
			if len(g.pip) == 0 {
				return fmt.Errorf("%q is not a command: give one such as \"python3 -m pip\"", v)
			}
			return nil
		}},
}

// engineOptions are the engine's options; with the kubernetes engine and
// a persistent workspace, the engine checks at once that it can make the
// workspaces' claims.
func (s *settings) engineOptions(log *slog.Logger) sandbox.EngineOptions {
	w := s.workspace
	return sandbox.EngineOptions{Kind: s.engine, Log: log, Namespace: s.namespace, SeccompLocalhost: s.seccompLocalhost,
		AllowWeakSeccomp: s.allowWeakSeccomp, AllowNoNetworkPolicy: s.allowNoNetworkPolicy,
		StorageClass: s.storageClass, WorkspaceSize: s.workspaceSize,
		Workspaces: s.engine == sandbox.EngineKubernetes && (w.project || w.volume != "")}
}

// storageClassName reports whether v can name a StorageClass (a DNS
// subdomain).
func storageClassName(v string) bool {
	if v == "" || len(v) > 253 || strings.HasPrefix(v, "-") || strings.HasPrefix(v, ".") {
		return false
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// runFlags bound one run_python call and shape its result.
type runFlags struct {
	timeout     time.Duration
	maxTimeout  time.Duration
	output      string
	outputLimit int
}

var runKnobs = []knob[runFlags]{
	{flag: "timeout", envs: []string{"CODEBRIDGE_TIMEOUT", "MCP_BRIDGE_TIMEOUT"}, def: secondsText(bridge.DefaultTimeout), typ: "seconds",
		usage: "default run_python timeout in seconds",
		set:   func(g *runFlags, v string) (err error) { g.timeout, err = seconds(v); return }},
	{flag: "max-timeout", envs: []string{"CODEBRIDGE_MAX_TIMEOUT", "MCP_BRIDGE_MAX_TIMEOUT"}, def: secondsText(bridge.DefaultMaxTimeout), typ: "seconds",
		usage: "largest timeout a call may ask for, in seconds",
		set:   func(g *runFlags, v string) (err error) { g.maxTimeout, err = seconds(v); return }},
	{flag: "output", envs: []string{"CODEBRIDGE_OUTPUT", "MCP_BRIDGE_OUTPUT_MODE"}, def: bridge.OutputText, typ: "mode",
		usage: "how results are rendered: text, or toon (structured values as TOON)",
		set: func(g *runFlags, v string) error {
			switch v = strings.ToLower(v); v {
			case bridge.OutputText, bridge.OutputTOON:
				g.output = v
			case "compact": // the Python bridge's name for plain text
				g.output = bridge.OutputText
			default:
				return fmt.Errorf("%q is not an output mode: use text or toon", v)
			}
			return nil
		}},
	{flag: "output-limit", envs: []string{"CODEBRIDGE_OUTPUT_LIMIT"}, def: strconv.Itoa(sandbox.DefaultOutputLimit), typ: "chars",
		usage: "characters of stdout and of stderr a result keeps (head and tail)",
		set:   func(g *runFlags, v string) (err error) { g.outputLimit, err = positiveCount(v); return }},
}

// stateFlags say where codebridge keeps its state on the host.
type stateFlags struct {
	stateDir string // the root of codebridge's state; resolved by stateDir
}

var stateKnobs = []knob[stateFlags]{
	{flag: "state-dir", envs: []string{"CODEBRIDGE_STATE_DIR", "MCP_BRIDGE_STATE_DIR"}, typ: "dir",
		usage: "root of codebridge's state on the host (default $XDG_STATE_HOME/codebridge, or ~/.local/state/codebridge): saved skills, the wheel cache of on-demand packages, the audit log",
		set:   func(g *stateFlags, v string) error { g.stateDir = v; return nil }},
}

// dir is the state directory.
func (g stateFlags) dir() statedir.Dir { return statedir.Dir(g.stateDir) }

// Log levels by default: the server logs what it does; the other commands
// print their results and only warnings and errors besides.
const (
	serveLogLevel   = "info"
	commandLogLevel = "warn"
)

// logFlags say what is logged, and how.
type logFlags struct {
	logLevel slog.Level
	logJSON  bool
	// ignored lists the Python bridge's settings that were given and have
	// no meaning here, for a debug log line each.
	ignored []string
}

var logKnobs = []knob[logFlags]{
	{flag: "log-level", envs: []string{"CODEBRIDGE_LOG_LEVEL", "MCP_BRIDGE_LOG_LEVEL"}, typ: "level", // the default is the command's
		usage: "debug, info, warn or error (logs go to stderr)",
		set:   (*logFlags).setLevel},
	{flag: "log-format", envs: []string{"CODEBRIDGE_LOG_FORMAT"}, def: "text", typ: "format", usage: "text or json",
		set: func(g *logFlags, v string) error {
			switch strings.ToLower(v) {
			case "text":
				g.logJSON = false
			case "json":
				g.logJSON = true
			default:
				return fmt.Errorf("%q is not a log format: use text or json", v)
			}
			return nil
		}},
	// The Python bridge's settings that mean nothing here: accepted, so
	// that its documented values never stop codebridge from starting.
	{envs: []string{"MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT"}, set: ignore("MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT: codebridge does not manage a Podman machine")},
	{envs: []string{"MCP_BRIDGE_ALLOW_SELF_SERVER"}, set: ignore("MCP_BRIDGE_ALLOW_SELF_SERVER: codebridge always skips entries that would launch itself")},
}

// setLevel reads a log level; the Python bridge's names of Python's
// levels are taken too.
func (g *logFlags) setLevel(v string) error {
	v = strings.ToLower(v)
	switch v {
	case "warning":
		v = "warn"
	case "critical", "fatal":
		v = "error"
	}
	if err := g.logLevel.UnmarshalText([]byte(v)); err != nil {
		return fmt.Errorf("%q is not a log level: use debug, info, warn or error", v)
	}
	return nil
}

// ignore notes a setting accepted for compatibility that does nothing.
func ignore(why string) func(*logFlags, string) error {
	return func(g *logFlags, _ string) error {
		g.ignored = append(g.ignored, why)
		return nil
	}
}

// The flags of each group, for the commands that take a whole group.
var (
	upstreamNames  = flagNames(upstreamKnobs)
	sandboxNames   = flagNames(sandboxKnobs)
	runNames       = flagNames(runKnobs)
	stateNames     = flagNames(stateKnobs)
	logNames       = flagNames(logKnobs)
	workspaceNames = flagNames(workspaceKnobs)
	gateNames      = flagNames(gateKnobs)
	httpNames      = flagNames(httpKnobs)
	oauthNames     = flagNames(oauthKnobs)
)
