package e2e

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// channelProbe is what code in the sandbox learns about the direct
// channel's socket and the host: every mount (point, root in its
// filesystem, options), what a connect to the socket gets, the socket
// directory's listing and link count, and every socket file on the
// sandbox's filesystem.
const channelProbe = `import json, os, socket, stat
mounts = {}
for line in open("/proc/self/mountinfo"):
    f = line.split()
    mounts[f[4]] = {"root": f[3], "opts": f[5]}
out = {"mounts": mounts}
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("/run/codebridge/frames.sock")
    out["connect"] = "connected"
except OSError as e:
    out["connect"] = type(e).__name__
try:
    out["list"] = os.listdir("/run/codebridge")
except OSError as e:
    out["list"] = type(e).__name__
try:
    out["nlink"] = os.stat("/run/codebridge").st_nlink
except OSError as e:
    out["nlink"] = type(e).__name__
socks = []
for root, dirs, files in os.walk("/"):
    if root in ("/proc", "/sys"):
        dirs[:] = []
        continue
    for name in files:
        p = os.path.join(root, name)
        try:
            if stat.S_ISSOCK(os.lstat(p).st_mode):
                socks.append(p)
        except OSError:
            pass
out["sockets"] = socks
print(json.dumps(out))`

type channelView struct {
	Mounts map[string]struct {
		Root string `json:"root"`
		Opts string `json:"opts"`
	} `json:"mounts"`
	Connect string   `json:"connect"`
	Sockets []string `json:"sockets"`
	NLink   any      `json:"nlink"`
}

func probeChannel(t *testing.T, b *bridge) channelView {
	t.Helper()
	out := strings.TrimSpace(b.ok(channelProbe))
	var v channelView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("probe output %q: %v", out, err)
	}
	return v
}

// TestHostileDirectChannel: on a local engine the sandbox's frames travel
// over the bridge's socket, and code in the sandbox, looking for a way
// out, finds that socket gone (no second connection), no other socket
// anywhere on its filesystem, and exactly one mount more than on the
// attach stream: the socket's directory, read-only, already removed on
// the host, so it holds nothing.
func TestHostileDirectChannel(t *testing.T) {
	localEngineOnly(t, "the direct channel is a Unix socket mounted from the bridge's machine; Kubernetes uses the attach stream")
	needEnv(t)
	direct := startBridge(t, home(t, nil))
	got := probeChannel(t, direct)
	if !strings.Contains(direct.stderr.String(), "sandbox frames travel over the direct channel") {
		t.Fatalf("the bridge did not log the direct channel:\n%s", direct.stderr)
	}
	if got.Connect != "FileNotFoundError" {
		t.Errorf("connecting to the bridge's socket from the sandbox: %s, want FileNotFoundError (the socket is removed once the runtime connected)", got.Connect)
	}
	if len(got.Sockets) != 0 {
		t.Errorf("the sandbox finds sockets: %v", got.Sockets)
	}
	if n, ok := got.NLink.(float64); !ok || n != 0 {
		t.Errorf("the socket's directory has link count %v, want 0 (removed on the host, so it holds nothing)", got.NLink)
	}

	attach := startBridge(t, home(t, nil), "CODEBRIDGE_CHANNEL=attach")
	base := probeChannel(t, attach)
	if !strings.Contains(attach.stderr.String(), "attach channel is configured") {
		t.Errorf("with --channel attach the bridge did not say so:\n%s", attach.stderr)
	}
	var extra []string
	for m := range got.Mounts {
		if _, ok := base.Mounts[m]; !ok {
			extra = append(extra, m)
		}
	}
	slices.Sort(extra)
	if !slices.Equal(extra, []string{"/run/codebridge"}) {
		t.Fatalf("mounts beyond the attach stream's: %v, want only /run/codebridge", extra)
	}
	m := got.Mounts["/run/codebridge"]
	if !slices.Contains(strings.Split(m.Opts, ","), "ro") {
		t.Errorf("/run/codebridge is mounted %s, want read-only", m.Opts)
	}
	hostDir, deleted := strings.CutSuffix(m.Root, "//deleted")
	if !deleted {
		t.Errorf("the socket's directory %q is still on the host", m.Root)
	}
	if _, err := os.Stat(hostDir); err == nil {
		t.Errorf("the host still has %s", hostDir)
	}
}
