package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/internal/termtext"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/spf13/cobra"
)

// check is one line of the doctor's report.
type check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Warn   bool   `json:"warning,omitempty"` // works, but not as configured
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
	TookMS int64  `json:"took_ms"`
}

func (c *cli) doctorCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the container engine, the image, whether limits apply, and every configured server",
		Long: `Check the container engine, the image, whether limits apply, and every
configured server. Each problem comes with a command that fixes it; the exit
code is 1 when something is broken.`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON")
	var s appSettings
	flags := slices.Concat(flagsOf[upstreamFlags](), flagsOf[sandboxFlags](), flagsOf[logFlags]())
	return c.settingsCommand(cmd, &s, flags, commandLogLevel, func([]string) error { return c.doctor(&s, asJSON) })
}

// doctor checks everything codebridge depends on and says what to do
// about each problem. It returns 1 when something is broken.
func (c *cli) doctor(s *appSettings, asJSON bool) error {
	a := newApp(s, c.stderr, nil)
	defer a.close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var checks []check
	add := func(ch check, start time.Time) {
		ch.TookMS = time.Since(start).Milliseconds()
		checks = append(checks, ch)
	}

	start := time.Now()
	if len(a.problems) == 0 {
		add(check{Name: "config", OK: true, Detail: fmt.Sprintf("%d server(s) configured", len(a.specs))}, start)
	}
	for _, p := range a.problems {
		add(check{Name: "config", Detail: p.Error(), Fix: configFix(p)}, start)
	}

	start = time.Now()
	eng, err := a.sandboxes.Engine(ctx)
	if err != nil {
		fix := "install Podman (apt install podman) or Docker, start its service, or set DOCKER_HOST/CONTAINER_HOST"
		if s.Sandbox.Engine == sandbox.EngineKubernetes {
			// The engine's error names each permission it lacks (it asks
			// the API server with SelfSubjectAccessReviews).
			fix = "set KUBECONFIG to a reachable cluster, and bind the bridge's account to the Role in deploy/kubernetes/rbac.yaml"
		}
		add(check{Name: "engine", Detail: err.Error(), Fix: fix}, start)
	} else {
		detail := eng.Name()
		if s.Sandbox.Engine == sandbox.EngineKubernetes {
			detail += "; the bridge may create, get, list, watch and delete pods, exec in them, list events and network policies"
		}
		add(check{Name: "engine", OK: true, Detail: detail}, start)
		sc := sandboxChecks(ctx, a, eng)
		if s.Sandbox.Engine == sandbox.EngineKubernetes {
			sc = kubeChecks(sc)
		}
		if ce, ok := eng.(sandbox.CheckedEngine); ok {
			sc = engineChecks(sc, ce.Checks())
		}
		checks = append(checks, sc...)
	}
	if !sandbox.KubernetesBuilt {
		add(check{Name: "kubernetes", OK: true, Detail: "the kubernetes engine is not compiled in (opt-in: client-go costs every bridge about 6 MB of memory); " +
			"for it, " + sandbox.KubernetesInstall}, time.Now())
	}
	checks = append(checks, serverChecks(ctx, a)...)
	checks = append(checks, packagesCheck(ctx, a.bridge.Packages()))

	broken := 0
	for _, ch := range checks {
		if !ch.OK {
			broken++
		}
	}
	if asJSON {
		if err := printJSON(c.stdout, map[string]any{"ok": broken == 0, "checks": checks}); err != nil {
			return err
		}
	} else {
		for _, ch := range checks {
			printCheck(c.stdout, ch)
		}
		if broken == 0 {
			fmt.Fprintln(c.stdout, "\nverdict: codebridge is ready")
		} else {
			fmt.Fprintf(c.stdout, "\nverdict: %d problem(s) to fix\n", broken)
		}
	}
	if broken > 0 {
		return errReported
	}
	return nil
}

// configFix is what to do about a configuration problem: a file that
// does not exist cannot be edited, so the fix is to create it or stop
// naming it.
func configFix(p discovery.Problem) string {
	if errors.Is(p, fs.ErrNotExist) {
		return "create " + p.File + ", or stop naming it (--config, CODEBRIDGE_CONFIG, MCP_SERVERS_CONFIG)"
	}
	return "edit " + p.File + " as the message says"
}

// probeCode reports, from inside the sandbox, the limits that really apply
// and whether the engine maps uids (rootless).
const probeCode = `import json, os
def read(*paths):
    for p in paths:
        try:
            return open(p).read().strip()
        except OSError:
            pass
print(json.dumps({
    "memory": read("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"),
    "pids": read("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max"),
    "uid_map": read("/proc/self/uid_map"),
    "uid": os.getuid(),
}))`

func sandboxChecks(ctx context.Context, a *app, eng sandbox.Engine) []check {
	var out []check
	start := time.Now()
	img, err := a.image(ctx, eng)
	switch {
	case err != nil:
		out = append(out, check{Name: "image", Detail: err.Error(), Fix: "check that the engine works: podman info / docker info"})
		return out
	case !img.present:
		out = append(out, check{Name: "image", Detail: img.name + " is not present (it is pulled on first use where a registry is reachable)",
			Fix: img.fix(), TookMS: time.Since(start).Milliseconds()})
		return out
	}
	out = append(out, check{Name: "image", OK: true, Detail: img.name + " is present", TookMS: time.Since(start).Milliseconds()})

	start = time.Now()
	res, err := a.bridge.Session().Run(ctx, sandbox.Request{Code: probeCode, Timeout: time.Minute})
	took := time.Since(start).Milliseconds()
	if err != nil || res.Status != sandbox.StatusOK {
		detail := fmt.Sprint(err)
		if res != nil {
			detail = res.Traceback + res.Notice + res.Stderr.Text
		}
		return append(out, check{Name: "sandbox", Detail: "the sandbox does not run Python: " + detail, TookMS: took,
			Fix: "check that the image has python3, and run with --log-level debug"})
	}
	var probe struct {
		Memory string `json:"memory"`
		Pids   string `json:"pids"`
		UIDMap string `json:"uid_map"`
		UID    int    `json:"uid"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(res.Stdout.Text)), &probe); err != nil {
		return append(out, check{Name: "sandbox", Detail: "unexpected answer from the sandbox: " + res.Stdout.Text, TookMS: took})
	}
	out = append(out, check{Name: "sandbox", OK: true, TookMS: took,
		Detail: fmt.Sprintf("python runs as uid %d; first cell took %dms (container start included)", probe.UID, took)})

	out = append(out, channelCheck(a.bridge.Session().Channel(), a.sandbox.Channel))

	rootless := !strings.HasPrefix(strings.Join(strings.Fields(probe.UIDMap), " "), "0 0 4294967295")
	mode := "rootful"
	if rootless {
		mode = "rootless (uids are mapped)"
	}
	out = append(out, check{Name: "rootless", OK: true, Warn: !rootless, Detail: mode,
		Fix: map[bool]string{true: "", false: "run Podman as a normal user: rootless containers keep an escape from being root on the host"}[rootless]})

	start = time.Now()
	if detail, err := a.bridge.Session().CheckHardening(ctx); err != nil {
		out = append(out, check{Name: "seccomp", Detail: err.Error(), Fix: "see docs/SECURITY.md", TookMS: time.Since(start).Milliseconds()})
	} else {
		out = append(out, check{Name: "seccomp", OK: true, Detail: detail, TookMS: time.Since(start).Milliseconds()})
	}

	limits := a.sandbox.limits()
	out = append(out, limitCheck("memory", probe.Memory, limits.Memory, "rootless Podman on cgroup v1 cannot set memory limits; use cgroup v2 (systemd.unified_cgroup_hierarchy=1) or rootful Podman"))
	pids := limits.Pids
	if pids == 0 {
		pids = 128
	}
	out = append(out, limitCheck("pids", probe.Pids, pids, "the engine could not set a pids limit; use cgroup v2 or rootful Podman"))
	return out
}

// kubeChecks words the sandbox checks as they apply to a Pod: the engine
// checked its permissions when it connected; an image cannot be checked
// per node; the frames take pods/attach by design; user namespaces are
// the cluster's. The seccomp filter and the pids limit are the engine's
// own checks ([engineChecks]): the container's cgroup shows no pids limit,
// which the kubelet sets on the Pod's.
func kubeChecks(in []check) []check {
	out := make([]check, 0, len(in))
	for _, ch := range in {
		switch ch.Name {
		case "image":
			if ch.OK {
				ch.Detail = strings.TrimSuffix(ch.Detail, " is present") + ": which node has it is known only when a Pod starts (one that lacks it fails at once with the kubelet's event)"
			}
		case "channel":
			ch.Warn, ch.Fix, ch.Detail = false, "", "attach: pods/attach through the API server (Kubernetes has no direct channel)"
		case "rootless":
			ch.Warn, ch.Fix, ch.Detail = false, "", "a Pod: runs as non-root with no capabilities; user namespaces for Pods are the cluster's (hostUsers: false)"
		}
		out = append(out, ch)
	}
	return out
}

// engineChecks adds an engine's own findings: to a passed line of the
// same name when the finding passed too, in its place when it did not
// (or the line failed), after the others when there is none.
func engineChecks(in []check, found []sandbox.EngineCheck) []check {
	out := slices.Clone(in)
	for _, f := range found {
		ch := check{Name: f.Name, OK: f.OK, Warn: f.Warn, Detail: f.Detail, Fix: f.Fix}
		i := slices.IndexFunc(out, func(c check) bool { return c.Name == f.Name })
		switch {
		case i < 0:
			out = append(out, ch)
		case f.OK && !f.Warn && out[i].OK && !out[i].Warn:
			out[i].Detail += "; " + f.Detail
		default:
			ch.TookMS = out[i].TookMS
			out[i] = ch
		}
	}
	return out
}

// channelCheck says what the sandbox's frames travel over; the attach
// stream where the direct channel was wanted is a warning (slower), not a
// problem.
func channelCheck(got string, mode sandbox.ChannelMode) check {
	slow := strings.HasPrefix(got, "attach") && mode != sandbox.ChannelAttach
	ch := check{Name: "channel", OK: true, Warn: slow, Detail: got}
	if slow {
		ch.Fix = "frames take the engine's attach stream, which is slower; the log says why at start-up (a remote engine or one in a virtual machine cannot mount the bridge's socket)"
	}
	return ch
}

func limitCheck(name, raw string, want int64, fix string) check {
	got, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || got != want {
		return check{Name: name, OK: true, Warn: true, Detail: fmt.Sprintf("limit %d is configured but the sandbox sees %q: it does not apply", want, raw), Fix: fix}
	}
	return check{Name: name, OK: true, Detail: fmt.Sprintf("limit %d applies", want)}
}

// printCheck prints one check. Its detail may hold a server's stderr:
// each line of it is escaped and indented, so that none can pass for a
// check or a verdict.
func printCheck(w io.Writer, ch check) {
	mark := "ok  "
	switch {
	case !ch.OK:
		mark = "FAIL"
	case ch.Warn:
		mark = "warn"
	}
	first, more, _ := strings.Cut(ch.Detail, "\n")
	fmt.Fprintf(w, "%s  %-10s %s (%dms)\n", mark, ch.Name, termtext.Line(first), ch.TookMS)
	for _, line := range strings.Split(more, "\n") {
		if line != "" {
			fmt.Fprintf(w, "      %-10s %s\n", "", termtext.Line(line))
		}
	}
	if ch.Fix != "" {
		fmt.Fprintf(w, "      %-10s fix: %s\n", "", termtext.Line(ch.Fix))
	}
}

func serverChecks(ctx context.Context, a *app) []check {
	servers := a.pool.Servers()
	out := make([]check, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			start := time.Now()
			tools, err := s.Tools(ctx)
			ch := check{Name: "server", TookMS: time.Since(start).Milliseconds()}
			if err != nil {
				// The host's detail (cause, stderr tail, command, config
				// file), not the sandbox's message, which points here.
				ch.Detail = s.Name() + ": " + upstream.HostDetail(err)
				ch.Fix = "run the server's command by hand to see why it fails, or set \"disabled\": true"
			} else {
				ch.OK = true
				ch.Detail = fmt.Sprintf("%s: starts, %d tools", s.Name(), len(tools))
			}
			out[i] = ch
		})
	}
	wg.Wait()
	return out
}
