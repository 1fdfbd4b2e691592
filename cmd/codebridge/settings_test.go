package main

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/codebridge/codebridge/bridge"
	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/httpserve"
	"github.com/codebridge/codebridge/internal/httpserve/oauth"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/spf13/pflag"
)

// parseSettings resolves the groups G of a command line that shows every
// flag of theirs, as a command does: a pure function of its arguments and
// environment.
func parseSettings[G any](argv []string, getenv func(string) string, defaults map[string]string) (*G, error) {
	fs := pflag.NewFlagSet("codebridge", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g := new(G)
	b := bindSettings(fs, g, flagsOf[G](), defaults)
	if err := fs.Parse(argv); err != nil {
		return nil, err
	}
	if err := b.resolve(getenv); err != nil {
		return nil, err
	}
	return g, nil
}

// configs are the packages' configurations a command line makes, before
// the commands add what they build (logs, the gate's redactor, tokens,
// metrics, the plan's workspace).
type configs struct {
	Discovery discovery.Options
	Bridge    bridge.Options
	Sandbox   sandbox.Config
	Engine    sandbox.EngineOptions
	Upstream  upstream.Options
	Gate      gate.Config
	HTTP      httpserve.Options
	OAuth     *oauth.Config
}

// configsOf are the configurations the settings make, by the functions
// the commands use.
func configsOf(s *settings) configs {
	return configs{
		Discovery: discovery.Options{Home: s.Upstream.home, Files: s.Upstream.Configs},
		Bridge:    bridgeOptions(s.Run, s.Upstream, s.HTTP),
		Sandbox:   sandboxConfig(s.Sandbox, s.Run, nil),
		Engine:    s.Sandbox.engineOptions(nil, s.Workspace.persistent()),
		Upstream:  s.Upstream.upstreamOptions(nil),
		Gate:      s.Gate.config(),
		HTTP:      s.HTTP.httpOptions(nil, nil, nil, nil),
		OAuth:     s.OAuth.config(),
	}
}

// defaultConfigs are the configurations of a command line that sets
// nothing, each default as its package states it.
func defaultConfigs() configs {
	c := configs{
		Discovery: discovery.Options{Home: "/h"},
		Bridge: bridge.Options{DefaultTimeout: bridge.DefaultTimeout, MaxTimeout: bridge.DefaultMaxTimeout, Output: bridge.OutputText,
			Version: version(), Warm: bridge.DefaultWarm, SessionIdle: bridge.DefaultSessionIdle},
		Sandbox: sandbox.Config{User: sandbox.DefaultUser, Channel: sandbox.DefaultChannel, OutputLimit: sandbox.DefaultOutputLimit,
			Checkpoints: new(int), Limits: sandbox.Limits{Memory: sandbox.DefaultMemory, Pids: sandbox.DefaultPids, CPUs: sandbox.DefaultCPUs, TmpSize: sandbox.DefaultTmpSize}},
		Engine:   sandbox.EngineOptions{Kind: "auto", SeccompLocalhost: sandbox.DefaultSeccompLocalhost, WorkspaceSize: sandbox.DefaultWorkspaceSize},
		Upstream: upstream.Options{CallTimeout: upstream.DefaultCallTimeout, Version: version()},
		Gate:     gate.Config{Policy: gate.Policy{Mode: gate.Open}, ApprovalTimeout: gate.DefaultApprovalTimeout},
		// MaxSessionsPerUser unset: httpserve derives it from MaxSessions.
		HTTP: httpserve.Options{IdleTimeout: httpserve.DefaultIdleTimeout, MaxSessions: httpserve.DefaultMaxSessions, BodyTimeout: httpserve.DefaultBodyTimeout},
	}
	*c.Sandbox.Checkpoints = sandbox.DefaultCheckpoints
	return c
}

// TestSettingsConfigs: parsing is a function from the arguments and the
// environment to the packages' configurations. Each case says what it
// changes from the defaults, or the error it ends in.
func TestSettingsConfigs(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	groups, err := oauth.ParseRule("groups=dev")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		argv    []string
		env     map[string]string
		kube    bool // the case needs the kubernetes engine compiled in
		want    func(*configs)
		wantErr string
	}{
		{name: "defaults", want: func(*configs) {}},
		{name: "the Python bridge's names", env: map[string]string{"MCP_BRIDGE_RUNTIME": "podman", "MCP_BRIDGE_TIMEOUT": "10s", "MCP_BRIDGE_MAX_TIMEOUT": "60",
			"MCP_BRIDGE_MEMORY": "1g", "MCP_BRIDGE_PIDS": "64", "MCP_BRIDGE_CPUS": "0.5", "MCP_BRIDGE_IMAGE": "img", "MCP_BRIDGE_CONTAINER_USER": "1000:1000",
			"MCP_BRIDGE_OUTPUT_MODE": "compact", "MCP_SERVERS_CONFIG": "/a.json", "MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT": "300"},
			want: func(c *configs) {
				c.Engine.Kind = "podman"
				c.Bridge.DefaultTimeout, c.Bridge.MaxTimeout = 10*time.Second, time.Minute
				c.Sandbox.Limits.Memory, c.Sandbox.Limits.Pids, c.Sandbox.Limits.CPUs = 1<<30, 64, 0.5
				c.Sandbox.Image, c.Sandbox.User = "img", "1000:1000"
				c.Discovery.Files = []string{"/a.json"}
			}},
		{name: "a flag wins over its variable", argv: []string{"--memory", "256m", "-t", "5"}, env: map[string]string{"CODEBRIDGE_MEMORY": "2g", "CODEBRIDGE_TIMEOUT": "soon"},
			want: func(c *configs) { c.Sandbox.Limits.Memory, c.Bridge.DefaultTimeout = 256<<20, 5*time.Second }},
		{name: "the default timeout is capped", argv: []string{"--timeout", "500", "--max-timeout", "200"},
			want: func(c *configs) { c.Bridge.DefaultTimeout, c.Bridge.MaxTimeout = 200*time.Second, 200*time.Second }},
		{name: "the sandbox", argv: []string{"--oci-runtime", "runsc", "--channel", "ATTACH", "--tmp-size", "1g", "--output", "toon", "--output-limit", "500"},
			want: func(c *configs) {
				c.Sandbox.Limits.Runtime, c.Sandbox.Channel, c.Sandbox.Limits.TmpSize = "runsc", sandbox.ChannelAttach, 1<<30
				c.Bridge.Output, c.Sandbox.OutputLimit = bridge.OutputTOON, 500
			}},
		{name: "checkpoints off", argv: []string{"--checkpoints", "0"}, want: func(c *configs) { *c.Sandbox.Checkpoints = 0 }},
		{name: "checkpoints from the environment", env: map[string]string{"CODEBRIDGE_CHECKPOINTS": "32"}, want: func(c *configs) { *c.Sandbox.Checkpoints = 32 }},
		{name: "too many checkpoints", env: map[string]string{"CODEBRIDGE_CHECKPOINTS": "33"}, wantErr: `CODEBRIDGE_CHECKPOINTS: "33" is not a number of checkpoints: give 0 (rewind off) to 32`},
		{name: "negative checkpoints", argv: []string{"--checkpoints", "-1"}, wantErr: `invalid argument "-1" for "--checkpoints" flag: "-1" is not a number of checkpoints`},
		{name: "roots and configs add up", argv: []string{"--root", dir, "--config", os.DevNull, "--call-timeout", "7"},
			env: map[string]string{"CODEBRIDGE_CONFIG": "/a.json" + string(os.PathListSeparator) + "/b.json"},
			want: func(c *configs) {
				c.Bridge.Roots, c.Discovery.Files, c.Upstream.CallTimeout = []string{dir}, []string{"/a.json", "/b.json", os.DevNull}, 7*time.Second
			}},
		{name: "the gate", argv: []string{"--policy", "read-only", "--approval-timeout", "5"},
			want: func(c *configs) { c.Gate.Policy.Mode, c.Gate.ApprovalTimeout = gate.ReadOnly, 5*time.Second }},
		{name: "serving HTTP", argv: []string{"--http", "127.0.0.1:8080", "--warm", "0", "--max-sessions", "4", "--max-sessions-per-user", "2",
			"--idle-timeout", "60", "--body-timeout", "9", "--tls-cert", "c.pem", "--tls-key", "k.pem", "--allowed-hosts", "a.example, b.example"},
			env: map[string]string{"CODEBRIDGE_ALLOWED_ORIGINS": "https://app.example"},
			want: func(c *configs) {
				c.Bridge.Mode, c.Bridge.Warm, c.Bridge.SessionIdle = bridge.ManyUsers, 0, time.Minute
				c.HTTP = httpserve.Options{Addr: "127.0.0.1:8080", TLSCert: "c.pem", TLSKey: "k.pem", IdleTimeout: time.Minute, MaxSessions: 4,
					MaxSessionsPerUser: 2, BodyTimeout: 9 * time.Second, AllowedHosts: []string{"a.example", "b.example"}, AllowedOrigins: []string{"https://app.example"}}
			}},
		{name: "OAuth", argv: []string{"--oauth-issuer", "https://b.example", "--oauth-allow", "groups=dev", "--oauth-scopes", "mcp, run",
			"--oauth-principal-claim", " email ", "--oauth-introspection-url", "https://b.example/introspect", "--oauth-introspection-client-id", "cb",
			"--oauth-introspection-secret-file", secret},
			env: map[string]string{"CODEBRIDGE_OAUTH_ISSUERS": "https://a.example", "CODEBRIDGE_OAUTH_KEY_REFRESH": "60"},
			want: func(c *configs) {
				c.OAuth = &oauth.Config{Issuers: []string{"https://a.example", "https://b.example"}, Scopes: []string{"mcp", "run"}, PrincipalClaim: "email",
					Allow: []oauth.Rule{groups}, MinRefresh: time.Minute,
					Introspection: &oauth.Introspection{URL: "https://b.example/introspect", ClientID: "cb", ClientSecret: "s3cret"}}
			}},
		{name: "kubernetes makes claims for a persistent workspace", kube: true,
			argv: []string{"--engine", "kubernetes", "--namespace", "ns", "--storage-class", "fast", "--workspace-size", "20g", "--seccomp-localhost", "codebridge.json"},
			want: func(c *configs) {
				c.Engine = sandbox.EngineOptions{Kind: "kubernetes", Namespace: "ns", StorageClass: "fast", WorkspaceSize: 20 << 30,
					SeccompLocalhost: "codebridge.json", Workspaces: true}
			}},
		{name: "the kubernetes engine's opt-outs of its checks", kube: true,
			argv: []string{"--engine", "kubernetes", "--workspace", "ephemeral", "--allow-weak-seccomp=true", "--seccomp-localhost", "RuntimeDefault"},
			env:  map[string]string{"CODEBRIDGE_ALLOW_NO_NETWORK_POLICY": "true"},
			want: func(c *configs) {
				c.Engine.Kind, c.Engine.SeccompLocalhost = "kubernetes", sandbox.SeccompRuntimeDefault
				c.Engine.AllowWeakSeccomp, c.Engine.AllowNoNetworkPolicy = true, true
			}},
		{name: "a yes-or-no flag alone means yes", kube: true,
			argv: []string{"--engine", "kubernetes", "--workspace", "ephemeral", "--allow-no-network-policy", "--allow-weak-seccomp", "--seccomp-localhost", "RuntimeDefault"},
			want: func(c *configs) {
				c.Engine.Kind, c.Engine.SeccompLocalhost = "kubernetes", sandbox.SeccompRuntimeDefault
				c.Engine.AllowWeakSeccomp, c.Engine.AllowNoNetworkPolicy = true, true
			}},
		{name: "an ephemeral workspace makes no claim", kube: true, argv: []string{"--engine", "kubernetes", "--workspace", "ephemeral"},
			want: func(c *configs) { c.Engine.Kind = "kubernetes" }},
		{name: "a bad variable is named", env: map[string]string{"MCP_BRIDGE_MEMORY": "lots"}, wantErr: `MCP_BRIDGE_MEMORY: "lots" is not a size`},
		{name: "a bad flag is named", argv: []string{"--pids", "0"}, wantErr: `invalid argument "0" for "--pids" flag: "0" is not a positive whole number`},
		{name: "a flag given twice", argv: []string{"--image", "a", "--image", "b"}, wantErr: "given twice"},
		{name: "a group is checked as a whole", env: map[string]string{"CODEBRIDGE_OAUTH_ISSUERS": "http://issuer.example"}, wantErr: "--oauth-issuer http://issuer.example"},
		{name: "a config file that does not exist", argv: []string{"--config", filepath.Join(dir, "none.json")}, wantErr: "does not exist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.kube && !sandbox.KubernetesBuilt {
				t.Skip("the kubernetes engine is not compiled in (go test -tags kubernetes)")
			}
			env := map[string]string{"HOME": "/h"}
			for k, v := range c.env {
				env[k] = v
			}
			s, err := parseSettings[settings](c.argv, func(k string) string { return env[k] }, map[string]string{"log-level": serveLogLevel})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := defaultConfigs()
			c.want(&want)
			if got := configsOf(s); !reflect.DeepEqual(got, want) {
				t.Errorf("configurations:\ngot  %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestSettingsTags: every group's tags work (a mistake panics when the
// commands are built), every setting has a variable and help, and no two
// settings share a flag or a variable.
func TestSettingsTags(t *testing.T) {
	_ = (&cli{getenv: func(string) string { return "" }}).rootCommand()
	flags, envs := map[string]bool{}, map[string]bool{}
	for _, s := range settingsOf(reflect.TypeFor[settings]()) {
		if len(s.envs) == 0 || s.usage == "" || s.group == "" {
			t.Errorf("--%s %v: a setting needs a variable, a usage and a group", s.flag, s.envs)
		}
		if s.flag != "" && (flags[s.flag] || s.typ == "") {
			t.Errorf("--%s is given twice, or has no type", s.flag)
		}
		flags[s.flag] = true
		for _, e := range s.envs {
			if envs[e] {
				t.Errorf("%s sets two settings", e)
			}
			envs[e] = true
		}
	}
}
