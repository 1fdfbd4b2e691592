//go:build kubernetes

package kube

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/codebridge/codebridge/pyruntime"
	"github.com/codebridge/codebridge/sandbox/engine"
)

// The start check of a sandbox Pod. What a Pod's sandbox may do depends
// on the cluster as well as on the Pod: the seccomp profile a node has
// under the name the Pod gives (or the container runtime's default),
// and the pids limit, which is the kubelet's. So every new sandbox
// checks itself before it runs any other code: the command the bridge
// starts in the Pod (pods/exec) is this check, then the runtime's
// loader. In a child process (so that a call that works changes nothing
// in the process that goes on to be the runtime), the check tries the
// calls codebridge's profile refuses and a runtime's default may not,
// tries to open the termination-message file, reads the pids limit of
// its cgroup and, in the first Pod, counts how many more tasks it can
// start, and counts the out-of-memory kills of its memory cgroup so far
// (exec.go reads them again when the runtime is killed); and it
// writes one line of JSON on stdout. No code of the model's has run yet,
// so the line can be believed; it is still read as data from the
// sandbox (bounded, parsed, clipped).

// kubeOOMSource defines _oom_kills(), the loader's count of the memory
// cgroup's out-of-memory kills (v2 or v1), or None.
var kubeOOMSource = pyruntime.OOMKillsSource()

// kubeCheckSource defines the check; kubeCommand calls it.
var kubeCheckSource = kubeOOMSource + `def _codebridge_check(term, room):
    import os
    child = os.fork()
    if child:
        os.waitpid(child, 0)
        os.dup(2)
        os.environ["CODEBRIDGE_OWN_PIDS"] = "1"
        os.environ["CODEBRIDGE_INIT"] = "subreaper"
        import signal
        os.kill(1, signal.SIGCHLD)
        return
    r = {}
    try:
        import ctypes, errno, json, threading
        libc = ctypes.CDLL(None, use_errno=True)
        def said(ret):
            return "ok" if ret >= 0 else errno.errorcode.get(ctypes.get_errno(), "E?")
        r["io_uring_setup"] = said(libc.syscall(425, 1, ctypes.create_string_buffer(120)))
        r["unshare"] = said(libc.unshare(0x10000000))
        r["ptrace"] = said(libc.ptrace(0, 0, None, None))
        keyctl = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine)
        if keyctl:
            r["keyctl"] = said(libc.syscall(keyctl, 0, -3, 0))
        def opens(p):
            try:
                os.close(os.open(p, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_NOCTTY))
                return "ok"
            except OSError as e:
                return errno.errorcode.get(e.errno, "E?")
        r["oom_kills"] = _oom_kills()
        r["termination"] = opens(term)
        r["dev_termination_log"] = opens("/dev/termination-log")
        for p in ("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max"):
            try:
                r["pids_max"] = open(p).read().strip()[:20]
                break
            except OSError:
                pass
        if room:
            threading.stack_size(65536)
            done, n = threading.Event(), 0
            try:
                while n < room:
                    threading.Thread(target=done.wait, daemon=True).start()
                    n += 1
            except RuntimeError:
                pass
            done.set()
            r["pids_room"] = n
    except BaseException as e:
        r["error"] = repr(e)[:200]
    finally:
        os.write(1, (json.dumps(r) + "\n").encode())
        os._exit(0)
`

// kubeCheckLineMax bounds the check's line.
const kubeCheckLineMax = 4096

// kubeCommand is the command the bridge starts in a sandbox Pod: cmd, a
// `python3 ... -c CODE` command, with the start check run before CODE.
// Then the check keeps a second descriptor of the exec stream's stderr:
// the runtime points its fd 2 at a pipe of its own once it runs (what
// code prints there travels as frames) and closes the stream it was
// given, and containerd ends an exec's stdin as soon as nothing holds its
// stderr, which would end the runtime. Code can write to that descriptor:
// what it writes reaches the bridge's log, within the log's budget
// (engine.ContainerLogBudget), and decides nothing (Exited reads the exit status
// and the cgroup, never these lines). And it tells the runtime, in
// CODEBRIDGE_OWN_PIDS, that the Pod's processes are its own but for the
// init, as a runtime under the loader's init knows by its parent (it may
// then stop what an interrupted cell left running, and a fork bomb); it
// asks the loader, in CODEBRIDGE_INIT, for the init a rewind needs: the
// exec'd process becomes one (a child subreaper) at its first rewind or
// fork, so that it lives as long as the runtime it hands the session to, and
// ends what is left when that one ends (pyruntime/loader.py runs again with
// --follow then, and this check does not); and it
// wakes the Pod's init (SIGCHLD), which then sees that a runtime runs. measurePids asks
// the check to count the tasks the Pod may start, up to one more than
// [engine.DefaultPids].
func kubeCommand(cmd []string, measurePids bool) ([]string, error) {
	if len(cmd) < 2 || cmd[len(cmd)-2] != "-c" {
		return nil, fmt.Errorf("sandbox: the kubernetes engine runs its start check before the sandbox's code, and needs a `python3 -c CODE` command, not %q", cmd)
	}
	room := 0
	if measurePids {
		room = engine.DefaultPids
	}
	out := slices.Clone(cmd)
	out[len(out)-1] = fmt.Sprintf("%simport sys\nif sys.argv[1:2] != [\"--follow\"]:\n    _codebridge_check(%q, %d)\ndel _codebridge_check, _oom_kills\n%s",
		kubeCheckSource, kubeTerminationPath, room, cmd[len(cmd)-1])
	return out, nil
}

// kubeReport is what the start check found, as it wrote it: each call's
// outcome ("ok" or the errno's name), how opening each termination-log
// path went, the cgroup's pids.max, and how many more tasks it could
// start (-1: not counted).
type kubeReport struct {
	IOUring        string `json:"io_uring_setup"`
	Unshare        string `json:"unshare"`
	Ptrace         string `json:"ptrace"`
	Keyctl         string `json:"keyctl"`
	Termination    string `json:"termination"`
	DevTermination string `json:"dev_termination_log"`
	PidsMax        string `json:"pids_max"`
	PidsRoom       int    `json:"pids_room"`
	OOMKills       int    `json:"oom_kills"`
	Error          string `json:"error"`
}

// parseKubeReport reads the check's line.
func parseKubeReport(line []byte) (kubeReport, error) {
	r := kubeReport{PidsRoom: -1, OOMKills: -1}
	if err := json.Unmarshal(line, &r); err != nil {
		return r, fmt.Errorf("its start check wrote %q, not its report", engine.ClipText(string(line), 200))
	}
	if r.Error != "" {
		return r, fmt.Errorf("its start check failed in Python: %s", engine.ClipText(r.Error, 200))
	}
	return r, nil
}

// refused says whether a call's outcome is a refusal: seccomp's EPERM (or
// the kernel's EACCES), or ENOSYS (no such call, or a profile that
// answers so). Anything else, success or an error of the call's own,
// means the call reached the kernel.
func refused(outcome string) bool {
	return outcome == "EPERM" || outcome == "EACCES" || outcome == "ENOSYS"
}

// openCalls names the calls the sandbox's seccomp filter let through. A
// call the check did not try (keyctl on an architecture it does not
// know) is not named.
func (r kubeReport) openCalls() []string {
	var open []string
	for _, c := range []struct{ name, outcome string }{
		{"io_uring_setup", r.IOUring}, {"unshare(CLONE_NEWUSER)", r.Unshare}, {"ptrace", r.Ptrace}, {"keyctl", r.Keyctl},
	} {
		if c.outcome != "" && !refused(c.outcome) || c.outcome == "" && c.name != "keyctl" {
			open = append(open, c.name)
		}
	}
	return open
}

// terminationOpen says whether the sandbox's user can open a
// termination-message file (on the node's disk, counted by no limit).
func (r kubeReport) terminationOpen() bool {
	return r.Termination == "ok" || r.DevTermination == "ok" || r.Termination == ""
}

// pidsVerdict words the pids limit the check saw: ok when the cgroup's
// own pids.max is at most advice, or when the Pod could not start advice
// more tasks; not ok when it could (the kubelet's podPidsLimit is above
// advice, or unset); known is false when the check did not count.
func (r kubeReport) pidsVerdict(advice int) (ok, known bool, detail string) {
	if n, err := strconv.Atoi(r.PidsMax); err == nil && n <= advice {
		return true, true, fmt.Sprintf("the sandbox's cgroup allows %d tasks", n)
	}
	switch {
	case r.PidsRoom < 0:
		return false, false, ""
	case r.PidsRoom >= advice:
		return false, true, fmt.Sprintf("a new sandbox Pod started %d more tasks without reaching a limit: the Pod's pids limit "+
			"(the kubelet's podPidsLimit) is above %d, or there is none, so a fork bomb is bounded by the node alone", r.PidsRoom, advice)
	}
	return true, true, fmt.Sprintf("a new sandbox Pod could start %d more tasks: the Pod's pids limit binds (at most %d)", r.PidsRoom, advice)
}

// kubeFindings are the start checks' findings that outlive one Pod:
// what doctor shows, and what is logged once rather than per Pod.
type kubeFindings struct {
	mu         sync.Mutex
	pidsCount  bool // a Pod is counting the pids limit, or has
	pids       *engine.Check
	weak       []string // calls let through, allowed by --allow-weak-seccomp
	weakLogged bool
	policy     engine.Check
}

// claimPidsCount says whether the next Pod should count the pids limit:
// the first Pod of the engine does (a few milliseconds), and another
// when that one failed before it said.
func (f *kubeFindings) claimPidsCount() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pidsCount {
		return false
	}
	f.pidsCount = true
	return true
}

// pidsUncounted gives the count to the next Pod.
func (f *kubeFindings) pidsUncounted() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pids == nil {
		f.pidsCount = false
	}
}

// errWeakSeccomp marks a start refused for the seccomp filter.
var errWeakSeccomp = errors.New("the seccomp filter is weaker than codebridge's")

// judge applies the start check's report: an error fails the start
// (a filter weaker than codebridge's without the opt-out, a
// termination-message file the sandbox can open); the pids limit and an
// allowed weak filter are logged once and kept for doctor.
func (e *kubeEngine) judge(pod string, r kubeReport, counted bool) error {
	if r.terminationOpen() {
		return fmt.Errorf("sandbox: in sandbox Pod %s on %s the sandbox's user can open the termination-message file "+
			"(%s: %s; /dev/termination-log: %s), which the kubelet keeps on the node's disk outside every limit: use an image whose "+
			"/root is root's with mode 0700, as Debian's images have it", pod, e.name, kubeTerminationPath, r.Termination, r.DevTermination)
	}
	if open := r.openCalls(); len(open) > 0 {
		if !e.allowWeakSeccomp {
			return fmt.Errorf("sandbox: sandbox Pod %s on %s: %w: its filter (%s) lets %s through: install codebridge's profile "+
				"on every node (`codebridge image seccomp` prints it; deploy/kubernetes/seccomp-installer.yaml writes it to the "+
				"kubelet's seccomp directory as %s) and name it with --seccomp-localhost, or run with --allow-weak-seccomp "+
				"to accept the weaker filter (doctor names it)", pod, e.name, errWeakSeccomp, e.seccompName(), strings.Join(open, ", "), DefaultSeccompLocalhost)
		}
		e.findings.mu.Lock()
		e.findings.weak = open
		first := !e.findings.weakLogged
		e.findings.weakLogged = true
		e.findings.mu.Unlock()
		if first {
			e.log.Warn("sandbox Pods run with a seccomp filter weaker than codebridge's, as --allow-weak-seccomp allows",
				"profile", e.seccompName(), "let_through", strings.Join(open, ", "))
		}
	}
	if counted {
		e.notePids(r)
	}
	return nil
}

// notePids keeps the pids verdict of the Pod that counted, and logs a
// limit above the advice.
func (e *kubeEngine) notePids(r kubeReport) {
	ok, known, detail := r.pidsVerdict(engine.DefaultPids)
	if !known {
		return
	}
	ch := &engine.Check{Name: "pids", OK: ok, Detail: detail}
	if !ok {
		ch.Fix = fmt.Sprintf("set the kubelet's podPidsLimit to %d on every node that runs sandboxes (KubeletConfiguration "+
			"podPidsLimit, or --pod-max-pids); a Pod cannot set its own", engine.DefaultPids)
		e.log.Warn("the sandbox Pods' pids limit is above the advice: "+detail, "fix", ch.Fix)
	}
	e.findings.mu.Lock()
	e.findings.pids = ch
	e.findings.mu.Unlock()
}

// seccompName names the Pods' profile for messages.
func (e *kubeEngine) seccompName() string {
	if e.seccomp == nil {
		return SeccompRuntimeDefault
	}
	return "Localhost " + *e.seccomp.LocalhostProfile
}

// Checks are the engine's findings for doctor: the network policy, the
// seccomp filter and the pids limit the start checks saw.
func (e *kubeEngine) Checks() []engine.Check {
	e.findings.mu.Lock()
	defer e.findings.mu.Unlock()
	out := []engine.Check{e.findings.policy}
	sc := engine.Check{Name: "seccomp", OK: true, Detail: "every sandbox Pod checks at its start that its filter (" + e.seccompName() +
		") refuses io_uring, user namespaces, ptrace and keyctl, and that it cannot open its termination-message file"}
	if len(e.findings.weak) > 0 {
		sc.Warn = true
		sc.Detail = "the sandbox Pods' filter (" + e.seccompName() + ") lets " + strings.Join(e.findings.weak, ", ") +
			" through, which --allow-weak-seccomp accepts"
		sc.Fix = "install codebridge's profile on the nodes (deploy/kubernetes/seccomp-installer.yaml), name it with --seccomp-localhost, and drop --allow-weak-seccomp"
	}
	out = append(out, sc)
	if e.findings.pids != nil {
		out = append(out, *e.findings.pids)
	}
	return out
}

// startCheck reads the new runtime's start check line from stdout, then
// hands the rest of stdout to the frames.
func (c *kubeContainer) startCheck(ctx context.Context) (kubeReport, error) {
	type answer struct {
		line []byte
		err  error
	}
	br := bufio.NewReaderSize(c.stdout, kubeCheckLineMax)
	got := make(chan answer, 1)
	go func() {
		line, err := br.ReadSlice('\n')
		got <- answer{line, err}
	}()
	select {
	case a := <-got:
		if errors.Is(a.err, bufio.ErrBufferFull) {
			return kubeReport{}, fmt.Errorf("its start check wrote more than %d bytes without a line's end", kubeCheckLineMax)
		}
		if a.err != nil {
			if errors.Is(a.err, io.EOF) {
				a.err = errors.New("its output ended")
			}
			return kubeReport{}, fmt.Errorf("its start check did not answer (%w)", a.err)
		}
		c.stdout = br
		return parseKubeReport(a.line)
	case <-ctx.Done():
		return kubeReport{}, fmt.Errorf("its start check did not answer before the start timed out (%w)", ctx.Err())
	}
}
