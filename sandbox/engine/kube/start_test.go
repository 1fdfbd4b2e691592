//go:build kubernetes

package kube

import (
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/sandbox/engine"

	"k8s.io/client-go/kubernetes/fake"
)

// TestKubeStartCheckRuns: the start check is real Python that runs
// before the loader: it writes one line of report that parses, and hands
// over to the code after it, which then reads all of stdin and finds
// CODEBRIDGE_INIT=subreaper (a rewind needs an init). Here it runs on the
// host (no seccomp filter: what it tries works), so its report says so.
// Run again as a rewind runs the loader (`--follow PID FD`), the check
// stays out of the way: no report, no variable.
func TestKubeStartCheckRuns(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed to run the start check: ", err)
	}
	cmd, err := kubeCommand([]string{py, "-I", "-u", "-c", "import os, sys\nprint('loader read', os.read(0, 5), os.environ.get('CODEBRIDGE_INIT'), sys.argv[1:])"}, true)
	if err != nil {
		t.Fatal(err)
	}
	// On the host, pid 1 is not the Pod's init: it is not woken.
	wake := "os.kill(1, signal.SIGCHLD)"
	if !strings.Contains(cmd[4], wake) {
		t.Fatalf("the check does not wake the init with %s", wake)
	}
	cmd[4] = strings.Replace(cmd[4], wake, "pass", 1)
	c := exec.Command(cmd[0], cmd[1:]...)
	c.Stdin = strings.NewReader("hello")
	out, err := c.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	first, rest, _ := strings.Cut(string(out), "\n")
	r, err := parseKubeReport([]byte(first))
	if err != nil {
		t.Fatal(err)
	}
	if r.IOUring == "" || r.Unshare == "" || r.Ptrace == "" || r.Termination == "" || r.DevTermination == "" || r.OOMKills == -1 {
		t.Errorf("the report lacks a probe: %s", first)
	}
	if r.PidsRoom != engine.DefaultPids {
		t.Errorf("counted %d more tasks on the host, want the cap %d: %s", r.PidsRoom, engine.DefaultPids, first)
	}
	if rest != "loader read b'hello' subreaper []\n" {
		t.Errorf("after the check the code printed %q", rest)
	}
	c = exec.Command(cmd[0], append(cmd[1:], "--follow", "1", "2")...)
	c.Stdin = strings.NewReader("hello")
	if out, err = c.Output(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if string(out) != "loader read b'hello' None ['--follow', '1', '2']\n" {
		t.Errorf("run with --follow (an init after a rewind), the command printed %q: the check ran", out)
	}
}

// codebridgeReport is what the check reports under codebridge's profile.
func codebridgeReport() kubeReport {
	return kubeReport{IOUring: "EPERM", Unshare: "EPERM", Ptrace: "EPERM", Keyctl: "EPERM",
		Termination: "EACCES", DevTermination: "ENOENT", PidsMax: "max", PidsRoom: 120}
}

// TestKubeStartCheckJudges: a sandbox whose filter lets io_uring (or
// another call codebridge's profile refuses) through fails its start,
// naming the calls and the opt-out; with the opt-out it runs and doctor
// is told; a termination-message file the sandbox can open fails it
// always; a pids limit above the advice is kept for doctor.
func TestKubeStartCheckJudges(t *testing.T) {
	e := testKubeEngine(fake.NewClientset())
	e.seccomp = seccompProfile("")
	if err := e.judge("p", codebridgeReport(), true); err != nil {
		t.Fatalf("codebridge's profile: %v", err)
	}
	holds(t, "pids within the advice", findCheck(e, "pids").OK)

	weak := codebridgeReport()
	weak.IOUring, weak.Keyctl = "ok", "EINVAL" // RuntimeDefault of containerd 1.6: io_uring_setup gives a ring
	err := e.judge("p", weak, false)
	if !errors.Is(err, errWeakSeccomp) {
		t.Fatalf("io_uring let through: %v", err)
	}
	for _, want := range []string{"io_uring_setup, keyctl", "Localhost codebridge.json", "--allow-weak-seccomp", "seccomp-installer.yaml"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	holds(t, "doctor's seccomp line is ok before the opt-out", findCheck(e, "seccomp").OK && !findCheck(e, "seccomp").Warn)

	e.allowWeakSeccomp = true
	if err := e.judge("p", weak, false); err != nil {
		t.Fatalf("with --allow-weak-seccomp: %v", err)
	}
	sc := findCheck(e, "seccomp")
	holds(t, "doctor warns of the opt-out, naming it and the calls", sc.OK && sc.Warn &&
		strings.Contains(sc.Detail, "--allow-weak-seccomp") && strings.Contains(sc.Detail, "io_uring_setup"))

	for _, term := range []kubeReport{{Termination: "ok", DevTermination: "ENOENT"}, {Termination: "EACCES", DevTermination: "ok"}, {}} {
		r := codebridgeReport()
		r.Termination, r.DevTermination = term.Termination, term.DevTermination
		if err := e.judge("p", r, false); err == nil || !strings.Contains(err.Error(), "termination-message file") {
			t.Errorf("a termination-message file that opens (%q, %q): %v", term.Termination, term.DevTermination, err)
		}
	}

	// A report with a call missing is not a refusal.
	e.allowWeakSeccomp = false
	r := codebridgeReport()
	r.Unshare = ""
	if err := e.judge("p", r, false); !errors.Is(err, errWeakSeccomp) {
		t.Errorf("a report without unshare's outcome: %v", err)
	}
	// keyctl is not tried on every architecture.
	r = codebridgeReport()
	r.Keyctl = ""
	if err := e.judge("p", r, false); err != nil {
		t.Errorf("a report without keyctl: %v", err)
	}
}

func findCheck(e *kubeEngine, name string) engine.Check {
	for _, c := range e.Checks() {
		if c.Name == name {
			return c
		}
	}
	return engine.Check{Name: name + " (missing)"}
}

// TestKubePidsVerdict: the cgroup's own limit decides when it is within
// the advice; else the count of tasks a new Pod could start does (the
// kubelet's podPidsLimit is on the Pod's cgroup, which the container
// cannot see).
func TestKubePidsVerdict(t *testing.T) {
	cases := []struct {
		max       string
		room      int
		ok, known bool
	}{
		{"100", -1, true, true},
		{"max", -1, false, false},
		{"max", 120, true, true},
		{"max", engine.DefaultPids, false, true},
		{"4096", engine.DefaultPids, false, true},
		{"", 3, true, true},
	}
	for _, c := range cases {
		ok, known, detail := kubeReport{PidsMax: c.max, PidsRoom: c.room}.pidsVerdict(engine.DefaultPids)
		if ok != c.ok || known != c.known {
			t.Errorf("pids.max %q, room %d: ok %v known %v (%s), want %v %v", c.max, c.room, ok, known, detail, c.ok, c.known)
		}
	}
	e := testKubeEngine(fake.NewClientset())
	e.notePids(kubeReport{PidsMax: "max", PidsRoom: engine.DefaultPids})
	if p := findCheck(e, "pids"); p.OK || !strings.Contains(p.Fix, "podPidsLimit") {
		t.Errorf("doctor's pids line for an unbounded Pod: %+v", p)
	}
}

// TestKubeStartCheckReading: the report is read as data: a line too
// long, a stream that ends, or text that is not the report fail the
// start with what was seen; after the line, the frames' reader starts
// where the check's ended.
func TestKubeStartCheckReading(t *testing.T) {
	run := func(out string) (kubeReport, *kubeContainer, error) {
		inR, inW := io.Pipe()
		go func() { _, _ = io.Copy(io.Discard, inR) }()
		c := &kubeContainer{stdin: inW, stdout: strings.NewReader(out), engine: testKubeEngine(fake.NewClientset())}
		r, err := c.startCheck(t.Context())
		return r, c, err
	}
	r, c, err := run(`{"io_uring_setup":"EPERM","unshare":"EPERM","ptrace":"EPERM","termination":"EACCES","dev_termination_log":"ENOENT","pids_max":"max","oom_kills":null}` + "\nFRAMES")
	if err != nil || r.IOUring != "EPERM" || r.PidsRoom != -1 || r.OOMKills != -1 {
		t.Fatalf("%+v %v", r, err)
	}
	rest, _ := io.ReadAll(c.stdout)
	if string(rest) != "FRAMES" {
		t.Errorf("the frames begin with %q", rest)
	}
	for out, want := range map[string]string{
		strings.Repeat("x", kubeCheckLineMax+1):            "without a line's end",
		`{"io_uring_setup":`:                               "its output ended",
		"codebridge init: out of memory\n":                 `wrote "codebridge init: out of memory\n", not its report`,
		`{"error":"ModuleNotFoundError('ctypes')"}` + "\n": "failed in Python: ModuleNotFoundError",
	} {
		if _, _, err := run(out); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40q: %v, want %q", out, err, want)
		}
	}
}

// TestKubeSeccompDefault: sandbox Pods get codebridge's profile from the
// nodes unless another is named, and the runtime's own only when asked.
func TestKubeSeccompDefault(t *testing.T) {
	p := seccompProfile("")
	holds(t, "codebridge.json by default", p != nil && *p.LocalhostProfile == DefaultSeccompLocalhost)
	holds(t, "a named one", *seccompProfile("team/strict.json").LocalhostProfile == "team/strict.json")
	holds(t, "RuntimeDefault when asked", seccompProfile(SeccompRuntimeDefault) == nil)
}
