package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/codebridge/codebridge/bridge"
	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/httpserve"
	"github.com/codebridge/codebridge/internal/httpserve/oauth"
	"github.com/codebridge/codebridge/internal/imagebuild"
	"github.com/codebridge/codebridge/internal/statedir"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/codebridge/codebridge/sandbox"
)

// This file holds the groups of settings of the upstream servers, the
// sandbox, a run, the state directory and the logs; the workspace's,
// the gate's and HTTP's are beside what they configure (workspace.go,
// gate.go, http.go). Each resolves to its package's own configuration
// type. settings.go says how a group's tags read.

// tagText are the words the settings' tags refer to as {name}: the
// defaults and names other packages state, each written once there.
var tagText = map[string]string{
	"pathsep":                             string(os.PathListSeparator),
	"upstream.DefaultCallTimeout":         secondsText(upstream.DefaultCallTimeout),
	"sandbox.DefaultWorkspaceSize":        strconv.Itoa(sandbox.DefaultWorkspaceSize>>30) + "g",
	"sandbox.DefaultMemory":               strconv.Itoa(sandbox.DefaultMemory>>20) + "m",
	"sandbox.DefaultPids":                 strconv.Itoa(sandbox.DefaultPids),
	"sandbox.DefaultCPUs":                 strconv.Itoa(sandbox.DefaultCPUs),
	"sandbox.DefaultTmpSize":              strconv.Itoa(sandbox.DefaultTmpSize>>20) + "m",
	"sandbox.DefaultUser":                 sandbox.DefaultUser,
	"sandbox.DefaultChannel":              string(sandbox.DefaultChannel),
	"sandbox.DefaultOutputLimit":          strconv.Itoa(sandbox.DefaultOutputLimit),
	"sandbox.DefaultCheckpoints":          strconv.Itoa(sandbox.DefaultCheckpoints),
	"sandbox.MaxCheckpoints":              strconv.Itoa(sandbox.MaxCheckpoints),
	"sandbox.DefaultImage":                sandbox.DefaultImage,
	"sandbox.DefaultSeccompLocalhost":     sandbox.DefaultSeccompLocalhost,
	"sandbox.SeccompRuntimeDefault":       sandbox.SeccompRuntimeDefault,
	"imagebuild.DefaultTag":               imagebuild.DefaultTag,
	"bridge.DefaultTimeout":               secondsText(bridge.DefaultTimeout),
	"bridge.DefaultMaxTimeout":            secondsText(bridge.DefaultMaxTimeout),
	"bridge.OutputText":                   bridge.OutputText,
	"bridge.DefaultWarm":                  strconv.Itoa(bridge.DefaultWarm),
	"DefaultWorkspace":                    DefaultWorkspace,
	"gate.Open":                           string(gate.Open),
	"gate.DefaultApprovalTimeout":         secondsText(gate.DefaultApprovalTimeout),
	"httpserve.DefaultIdleTimeout":        secondsText(httpserve.DefaultIdleTimeout),
	"httpserve.DefaultMaxSessions":        strconv.Itoa(httpserve.DefaultMaxSessions),
	"httpserve.DefaultMaxSessionsPerUser": strconv.Itoa(httpserve.DefaultMaxSessionsPerUser(httpserve.DefaultMaxSessions)),
	"httpserve.DefaultUserShare":          strconv.Itoa(httpserve.DefaultUserShare),
	"httpserve.DefaultBodyTimeout":        secondsText(httpserve.DefaultBodyTimeout),
	"oauth.DefaultPrincipalClaim":         oauth.DefaultPrincipalClaim,
	"oauth.DefaultGroupsClaim":            oauth.DefaultGroupsClaim,
	"oauth.DefaultMinRefresh":             secondsText(oauth.DefaultMinRefresh),
}

// upstreamFlags say which servers there are and how they are called.
type upstreamFlags struct {
	Configs     []string      `flag:"config,repeatable" env:"CODEBRIDGE_CONFIG,MCP_SERVERS_CONFIG" type:"file" parse:"configs" usage:"extra mcpServers config files (repeatable; the variables take a {pathsep}-separated list), read after ~/MCPs/*.json"`
	CallTimeout time.Duration `flag:"call-timeout" env:"CODEBRIDGE_CALL_TIMEOUT" default:"{upstream.DefaultCallTimeout}" type:"seconds" usage:"time limit of one upstream tool call, in seconds (a server's \"timeout\" overrides it)"`
	// Roots are directories given to upstreams as roots when the client
	// has none.
	Roots []string `flag:"root,repeatable" env:"CODEBRIDGE_ROOTS" type:"dir" parse:"dirs" usage:"a directory upstream servers get as a root when the MCP client gives none (repeatable; the variable takes a {pathsep}-separated list)" doc:"It replaces the directories a server such as the filesystem server was given in its args."`
	// home is the home directory ($HOME), whose ~/MCPs holds the servers.
	home string
}

// complete takes the home directory from the environment.
func (g *upstreamFlags) complete(getenv func(string) string) error {
	g.home = getenv("HOME")
	return nil
}

// upstreamOptions are the upstream pool's options.
func (g upstreamFlags) upstreamOptions(log *slog.Logger) upstream.Options {
	return upstream.Options{CallTimeout: g.CallTimeout, Version: version(), Log: log}
}

// dirList reads a list of existing directories.
func dirList(v string) ([]string, error) {
	out := pathList(v)
	for _, d := range out {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%q is not a directory; give an existing directory", d)
		}
	}
	return out, nil
}

// sandboxFlags say which engine and image the sandbox uses and how it is
// bounded.
type sandboxFlags struct {
	Engine string `flag:"engine" env:"CODEBRIDGE_ENGINE,MCP_BRIDGE_RUNTIME" default:"auto" type:"name" parse:"engine" usage:"container engine: auto, podman, docker or kubernetes (sandboxes as Pods; KUBECONFIG, or in-cluster in a Pod)" doc:"DOCKER_HOST and CONTAINER_HOST are honoured; see docs/operator-guide.md, Kubernetes."`
	// Namespace, SeccompLocalhost, StorageClass and WorkspaceSize are the
	// kubernetes engine's (see sandbox.EngineOptions).
	Namespace        string `flag:"namespace" env:"CODEBRIDGE_NAMESPACE" type:"name" usage:"Kubernetes namespace of the sandbox Pods (--engine kubernetes); by default the bridge Pod's own, else the kubeconfig context's, else default"`
	SeccompLocalhost string `flag:"seccomp-localhost" env:"CODEBRIDGE_SECCOMP_LOCALHOST" default:"{sandbox.DefaultSeccompLocalhost}" type:"profile" parse:"seccomp" usage:"seccomp profile of the sandbox Pods, installed on the Kubernetes nodes, relative to the kubelet's seccomp directory (codebridge image seccomp prints codebridge's; see docs/scale-out.md); {sandbox.SeccompRuntimeDefault} means the container runtime's own"`
	// AllowWeakSeccomp and AllowNoNetworkPolicy are the kubernetes
	// engine's opt-outs of its checks (see sandbox.EngineOptions).
	AllowWeakSeccomp     bool   `flag:"allow-weak-seccomp" env:"CODEBRIDGE_ALLOW_WEAK_SECCOMP" default:"false" type:"bool" usage:"run sandbox Pods whose seccomp filter lets io_uring, user namespaces, ptrace or keyctl through (--engine kubernetes; each Pod checks at its start, and fails it without this); doctor names it"`
	AllowNoNetworkPolicy bool   `flag:"allow-no-network-policy" env:"CODEBRIDGE_ALLOW_NO_NETWORK_POLICY" default:"false" type:"bool" usage:"start sandbox Pods in a namespace where no NetworkPolicy denies them all ingress and egress (--engine kubernetes; refused without this); doctor names it"`
	StorageClass         string `flag:"storage-class" env:"CODEBRIDGE_STORAGE_CLASS" type:"name" parse:"storage" usage:"StorageClass of the persistent workspaces' PersistentVolumeClaims (--engine kubernetes); by default the cluster's default class" doc:"With none named and no default class, the bridge stops at start and says to name one or give --workspace ephemeral."`
	WorkspaceSize        int64  `flag:"workspace-size" env:"CODEBRIDGE_WORKSPACE_SIZE" default:"{sandbox.DefaultWorkspaceSize}" type:"size" parse:"size" usage:"size of a persistent workspace's PersistentVolumeClaim (--engine kubernetes), e.g. 1g or 20g"`
	// Image is empty for the built image when the engine has it, else the
	// registry image.
	Image   string              `flag:"image" env:"CODEBRIDGE_IMAGE,MCP_BRIDGE_IMAGE" type:"image" usage:"sandbox image (must have python3); by default {imagebuild.DefaultTag} (what codebridge image build makes) when the engine has it, else {sandbox.DefaultImage}"`
	Memory  int64               `flag:"memory" env:"CODEBRIDGE_MEMORY,MCP_BRIDGE_MEMORY" default:"{sandbox.DefaultMemory}" type:"size" parse:"size" usage:"sandbox memory limit, e.g. 512m or 2g"`
	Pids    int64               `flag:"pids" env:"CODEBRIDGE_PIDS,MCP_BRIDGE_PIDS" default:"{sandbox.DefaultPids}" type:"n" parse:"positive" usage:"sandbox process limit"`
	CPUs    float64             `flag:"cpus" env:"CODEBRIDGE_CPUS,MCP_BRIDGE_CPUS" default:"{sandbox.DefaultCPUs}" type:"n" parse:"cpus" usage:"sandbox CPU limit"`
	TmpSize int64               `flag:"tmp-size" env:"CODEBRIDGE_TMP_SIZE" default:"{sandbox.DefaultTmpSize}" type:"size" parse:"size" usage:"size of the sandbox's /tmp, and of /workspace when it is ephemeral, e.g. 256m or 1g" doc:"It is memory, counted in the memory limit."`
	User    string              `flag:"user" env:"CODEBRIDGE_USER,MCP_BRIDGE_CONTAINER_USER" default:"{sandbox.DefaultUser}" type:"uid:gid" parse:"user" usage:"user the sandbox code runs as (never root: uid 0 and gid 0 are refused)"`
	Runtime string              `flag:"oci-runtime" env:"CODEBRIDGE_OCI_RUNTIME" type:"name" parse:"runtime" usage:"OCI runtime for the sandbox, such as runsc (gVisor) or kata; empty means the engine's default"`
	Channel sandbox.ChannelMode `flag:"channel" env:"CODEBRIDGE_CHANNEL" default:"{sandbox.DefaultChannel}" type:"mode" parse:"channel" usage:"how the sandbox's frames travel: auto (a Unix socket the bridge owns, mounted into that sandbox alone, where the engine runs on this machine; else the engine's attach stream) or attach (always the attach stream)" doc:"The socket is mounted read-only at /run/codebridge and removed once the runtime connected; where the attach stream is used instead, the log says why. codebridge doctor shows which one a sandbox uses."`
	// Pip is the command that runs pip on the host (packages on demand).
	Pip []string `flag:"pip" env:"CODEBRIDGE_PIP" default:"python3 -m pip" type:"command" parse:"command" usage:"the command that runs pip on the host, for runtime.install (packages on demand)"`
}

// complete checks the sandbox's settings with the sandbox's own words.
func (g *sandboxFlags) complete(func(string) string) error {
	return sandbox.Config{User: g.User, Limits: g.limits()}.Validate()
}

// limits are the sandbox's limits.
func (g sandboxFlags) limits() sandbox.Limits {
	return sandbox.Limits{Memory: g.Memory, Pids: g.Pids, CPUs: g.CPUs, TmpSize: g.TmpSize, Runtime: g.Runtime}
}

// engineOptions are the engine's options; with the kubernetes engine and
// a persistent workspace, the engine checks at once that it can make the
// workspaces' claims.
func (g sandboxFlags) engineOptions(log *slog.Logger, persistent bool) sandbox.EngineOptions {
	return sandbox.EngineOptions{Kind: g.Engine, Log: log, Namespace: g.Namespace, SeccompLocalhost: g.SeccompLocalhost,
		AllowWeakSeccomp: g.AllowWeakSeccomp, AllowNoNetworkPolicy: g.AllowNoNetworkPolicy,
		StorageClass: g.StorageClass, WorkspaceSize: g.WorkspaceSize,
		Workspaces: g.Engine == sandbox.EngineKubernetes && persistent}
}

// sandboxConfig is the sandbox's configuration: the sandbox and run
// settings, and the plan's workspace, mounts and user when there is one.
func sandboxConfig(g sandboxFlags, run runFlags, plan *runPlan) sandbox.Config {
	cfg := sandbox.Config{Image: g.Image, User: g.User, Limits: g.limits(), Channel: g.Channel, OutputLimit: run.OutputLimit,
		Checkpoints: &run.Checkpoints}
	if plan != nil {
		cfg.User, cfg.Workspace, cfg.Mounts = plan.user, plan.workspace, plan.mounts
	}
	return cfg
}

func parseEngine(v string) (string, error) {
	v = strings.ToLower(v)
	if v != "auto" && v != "podman" && v != "docker" && v != sandbox.EngineKubernetes {
		return "", fmt.Errorf("%q is not an engine: use auto, podman, docker or kubernetes", v)
	}
	if v == sandbox.EngineKubernetes && !sandbox.KubernetesBuilt {
		return "", sandbox.ErrKubernetesNotBuilt
	}
	return v, nil
}

func parseSeccompProfile(v string) (string, error) {
	if strings.HasPrefix(v, "/") || strings.Contains(v, "..") {
		return "", fmt.Errorf("%q must be a path relative to the kubelet's seccomp directory, such as %s", v, sandbox.DefaultSeccompLocalhost)
	}
	return v, nil
}

func parseStorageClass(v string) (string, error) {
	if !storageClassName(v) {
		return "", fmt.Errorf("%q is not a StorageClass name (lower-case letters, digits, '-' and '.')", v)
	}
	return v, nil
}

func parseCPUs(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("%q is not a positive number of CPUs", v)
	}
	return f, nil
}

func parseUser(v string) (string, error) { return v, sandbox.CheckUser(v) }

func parseRuntime(v string) (string, error) { return v, sandbox.CheckRuntime(v) }

func parseChannel(v string) (sandbox.ChannelMode, error) {
	return sandbox.ParseChannelMode(strings.ToLower(v))
}

// parseCommand reads a command line of words.
func parseCommand(v string) ([]string, error) {
	words := strings.Fields(v)
	if len(words) == 0 {
		return nil, fmt.Errorf("%q is not a command: give one such as \"python3 -m pip\"", v)
	}
	return words, nil
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
	Timeout     time.Duration `flag:"timeout" short:"t" env:"CODEBRIDGE_TIMEOUT,MCP_BRIDGE_TIMEOUT" default:"{bridge.DefaultTimeout}" type:"seconds" usage:"default run_python timeout in seconds"`
	MaxTimeout  time.Duration `flag:"max-timeout" env:"CODEBRIDGE_MAX_TIMEOUT,MCP_BRIDGE_MAX_TIMEOUT" default:"{bridge.DefaultMaxTimeout}" type:"seconds" usage:"largest timeout a call may ask for, in seconds"`
	Output      string        `flag:"output" env:"CODEBRIDGE_OUTPUT,MCP_BRIDGE_OUTPUT_MODE" default:"{bridge.OutputText}" type:"mode" parse:"output" usage:"how results are rendered: text, or toon (structured values as TOON)" doc:"toon shows a final value that is JSON data (lists of records, a tool's structured result) as TOON."`
	OutputLimit int           `flag:"output-limit" env:"CODEBRIDGE_OUTPUT_LIMIT" default:"{sandbox.DefaultOutputLimit}" type:"chars" parse:"count" usage:"characters of stdout and of stderr a result keeps (head and tail)" doc:"A longer stream is saved whole in /workspace/.codebridge/output/, and the answer names the file."`
	Checkpoints int           `flag:"checkpoints" env:"CODEBRIDGE_CHECKPOINTS" default:"{sandbox.DefaultCheckpoints}" type:"n" parse:"checkpoints" usage:"checkpoints for rewind a sandbox keeps, one forked after each cell (0 to {sandbox.MaxCheckpoints}); 0 turns rewind off" doc:"Each checkpoint is a process of the sandbox, and the next cell waits for its fork (a few milliseconds); scripts that run many short cells back to back and never rewind can give 0 (docs/rewind.md)."`
}

// complete caps the default timeout (a default above the cap is the cap)
// and checks the run's settings with the bridge's and the sandbox's words.
func (g *runFlags) complete(func(string) string) error {
	g.Timeout = min(g.Timeout, g.MaxTimeout)
	if err := (bridge.Options{DefaultTimeout: g.Timeout, MaxTimeout: g.MaxTimeout, Output: g.Output}).Validate(); err != nil {
		return err
	}
	return sandbox.Config{OutputLimit: g.OutputLimit, Checkpoints: &g.Checkpoints}.Validate()
}

// bridgeOptions are the bridge's options the settings make; newApp adds
// what it builds (log, gate, packages, skills, metrics).
func bridgeOptions(run runFlags, up upstreamFlags, h httpFlags) bridge.Options {
	return bridge.Options{
		DefaultTimeout: run.Timeout,
		MaxTimeout:     run.MaxTimeout,
		Output:         run.Output,
		Version:        version(),
		Roots:          up.Roots,
		Mode:           serving(h),
		Warm:           h.Warm,
		// A session handle idles out as an HTTP session does.
		SessionIdle: h.IdleTimeout,
	}
}

// serving is whom the bridge serves: many users over HTTP (--http), the
// one local user otherwise.
func serving(h httpFlags) bridge.Mode {
	if h.Addr != "" {
		return bridge.ManyUsers
	}
	return bridge.OneUser
}

func parseOutput(v string) (string, error) {
	switch v = strings.ToLower(v); v {
	case bridge.OutputText, bridge.OutputTOON:
		return v, nil
	case "compact": // the Python bridge's name for plain text
		return bridge.OutputText, nil
	}
	return "", fmt.Errorf("%q is not an output mode: use text or toon", v)
}

// stateFlags say where codebridge keeps its state on the host.
type stateFlags struct {
	// StateDir is the root of codebridge's state; complete resolves it.
	StateDir string `flag:"state-dir" env:"CODEBRIDGE_STATE_DIR,MCP_BRIDGE_STATE_DIR" type:"dir" usage:"root of codebridge's state on the host (default $XDG_STATE_HOME/codebridge, or ~/.local/state/codebridge): saved skills, the wheel cache of on-demand packages, the audit log" doc:"Skills are in skills/ (made on the first save), the wheel cache in packages/, what each server lists (for search without starting it) in catalogue/."`
}

// complete resolves the state directory: the setting with a leading ~
// expanded, else $XDG_STATE_HOME/codebridge, else
// ~/.local/state/codebridge.
func (g *stateFlags) complete(getenv func(string) string) error {
	home := getenv("HOME")
	switch set := g.StateDir; {
	case set == "~" || strings.HasPrefix(set, "~/"):
		g.StateDir = filepath.Join(home, set[1:])
	case set != "":
	case getenv("XDG_STATE_HOME") != "":
		g.StateDir = filepath.Join(getenv("XDG_STATE_HOME"), "codebridge")
	default:
		g.StateDir = filepath.Join(home, ".local", "state", "codebridge")
	}
	return nil
}

// dir is the state directory.
func (g stateFlags) dir() statedir.Dir { return statedir.Dir(g.StateDir) }

// Log levels by default: the server logs what it does; the other commands
// print their results and only warnings and errors besides.
const (
	serveLogLevel   = "info"
	commandLogLevel = "warn"
)

// logFlags say what is logged, and how.
type logFlags struct {
	Level slog.Level `flag:"log-level" env:"CODEBRIDGE_LOG_LEVEL,MCP_BRIDGE_LOG_LEVEL" type:"level" parse:"level" usage:"debug, info, warn or error (logs go to stderr)"` // the default is the command's
	JSON  bool       `flag:"log-format" env:"CODEBRIDGE_LOG_FORMAT" default:"text" type:"format" parse:"logformat" usage:"text or json"`
	// The Python bridge's settings that mean nothing here: accepted, so
	// that its documented values never stop codebridge from starting;
	// each one given is a debug line.
	RuntimeIdleTimeout string `env:"MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT" usage:"accepted and ignored: codebridge does not manage a Podman machine"`
	AllowSelfServer    string `env:"MCP_BRIDGE_ALLOW_SELF_SERVER" usage:"accepted and ignored: codebridge always skips entries that would launch itself"`
}

// ignored are the Python bridge's settings given that mean nothing here,
// each with why (its usage).
func (g logFlags) ignored() []string {
	v := reflect.ValueOf(g)
	var out []string
	for _, s := range settingsOf(v.Type()) {
		if why, ok := strings.CutPrefix(s.usage, "accepted and ignored: "); ok && v.FieldByIndex(s.index).String() != "" {
			out = append(out, s.envs[0]+": "+why)
		}
	}
	return out
}

// parseLevel reads a log level; the Python bridge's names of Python's
// levels are taken too.
func parseLevel(v string) (slog.Level, error) {
	v = strings.ToLower(v)
	switch v {
	case "warning":
		v = "warn"
	case "critical", "fatal":
		v = "error"
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		return l, fmt.Errorf("%q is not a log level: use debug, info, warn or error", v)
	}
	return l, nil
}

// parseLogFormat reads a log format: whether logs are JSON.
func parseLogFormat(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "text":
		return false, nil
	case "json":
		return true, nil
	}
	return false, fmt.Errorf("%q is not a log format: use text or json", v)
}
