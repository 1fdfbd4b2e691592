package sandbox

import (
	"context"
	"errors"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codebridge/codebridge/sandbox/engine"
)

// adoptEngine runs detachable runtimes as local python3 processes
// (procEngine) and keeps their labels; Exec runs the relay as a local
// process too, which reaches the runtime's abstract socket in the host's
// network namespace. Detach closes a runtime's stdin, as Podman does when
// a bridge's attach ends.
type adoptEngine struct {
	procEngine
	mu    sync.Mutex
	ctrs  map[string]*detachableProc
	execs int
}

type detachableProc struct {
	*proc
	labels map[string]string
}

// Detach closes the runtime's stdin and leaves it running.
func (d *detachableProc) Detach() { d.stdin.Close() }

func (e *adoptEngine) Start(ctx context.Context, spec ContainerSpec) (Container, error) {
	c, err := e.procEngine.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	d := &detachableProc{proc: c.(*proc), labels: spec.Labels}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ctrs[d.ID()] = d
	return d, nil
}

func (e *adoptEngine) List(context.Context) ([]ContainerInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []ContainerInfo
	for id, d := range e.ctrs {
		state := "running"
		select {
		case <-d.done:
			state = "exited"
		default:
		}
		out = append(out, ContainerInfo{ID: id, State: state, Labels: d.labels})
	}
	return out, nil
}

// Exec runs cmd (the relay) as a local process; removing what it returns
// removes the runtime it reached.
func (e *adoptEngine) Exec(ctx context.Context, id string, cmd []string) (Container, error) {
	e.mu.Lock()
	e.execs++
	d := e.ctrs[id]
	e.mu.Unlock()
	c, err := e.procEngine.Start(ctx, ContainerSpec{Cmd: cmd})
	if err != nil {
		return nil, err
	}
	return &relayProc{proc: c.(*proc), runtime: d}, nil
}

type relayProc struct {
	*proc
	runtime *detachableProc
}

func (r *relayProc) ID() string { return r.runtime.ID() }
func (r *relayProc) Detach()    { r.stdin.Close() }
func (r *relayProc) Remove(ctx context.Context) error {
	_ = r.proc.Remove(ctx)
	return r.runtime.Remove(ctx)
}

func adoptManager(t *testing.T, e *adoptEngine) *Manager {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	return &Manager{log: slog.Default(), connect: func(context.Context) (Engine, error) { return e, nil }}
}

func detachable(digest, principal string) Config {
	return Config{Detachable: &Detachable{Digest: digest, Key: strings.Repeat("k", 32) + digest, Principal: principal, Idle: time.Hour}}
}

// TestAdoptResumesTheInterpreter: a session detaches (its runtime's
// stdin closes, as when its bridge dies); another manager adopts it by
// digest and principal, is told where the runtime was, and finds the
// variables. Another principal, and an unknown digest, get the same
// ErrNoSandbox, and no relay runs for them.
func TestAdoptResumesTheInterpreter(t *testing.T) {
	e := &adoptEngine{ctrs: map[string]*detachableProc{}}
	a := adoptManager(t, e)
	digest := "d" + strings.Repeat("0", 20) + time.Now().Format("150405.000000")
	s := a.NewSession(detachable(digest, "token:alice"), nil)
	t.Cleanup(func() { _ = s.Close() })
	run(t, s, Request{Code: "x = 41\nprint('set')"})
	if err := s.Detach(); err != nil {
		t.Fatal(err)
	}
	if s.state() != stateClosed {
		t.Fatalf("a detached session is %s, want closed", s.state())
	}

	b := adoptManager(t, e)
	_, _, errOther := b.Adopt(context.Background(), detachable(digest, "token:mallory"), nil)
	_, _, errNone := b.Adopt(context.Background(), detachable(digest+"x", "token:alice"), nil)
	if !errors.Is(errOther, ErrNoSandbox) || errOther.Error() != errNone.Error() || e.execs != 0 {
		t.Fatalf("another principal: %v; an unknown digest: %v; relays run %d; want the same ErrNoSandbox and none", errOther, errNone, e.execs)
	}

	adopted, where, err := b.Adopt(context.Background(), detachable(digest, "token:alice"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = adopted.Close() })
	if adopted.state() != stateReady || where.Cell != 1 || where.Running || where.Done == nil || where.Stdout != "set\n" {
		t.Fatalf("adopted: %s, where %+v; want ready, cell 1 done with its output", adopted.state(), where)
	}
	if res := run(t, adopted, Request{Code: "x + 1"}); res.Value != "42" {
		t.Fatalf("x + 1 = %q after adoption, want 42", res.Value)
	}
}

// TestDetachableChecks: a digest must be a label value, the key long
// enough, the principal given; a session that is not detachable cannot
// detach.
func TestDetachableChecks(t *testing.T) {
	ok := Detachable{Digest: "ab12", Key: strings.Repeat("k", 32), Principal: "p"}
	if err := ok.check(); err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]Detachable{
		"empty digest":    {Key: ok.Key, Principal: "p"},
		"long digest":     {Digest: strings.Repeat("a", 64), Key: ok.Key, Principal: "p"},
		"path digest":     {Digest: "../x", Key: ok.Key, Principal: "p"},
		"short key":       {Digest: "ab", Key: "short", Principal: "p"},
		"no principal":    {Digest: "ab", Key: ok.Key},
		"negative idle":   {Digest: "ab", Key: ok.Key, Principal: "p", Idle: -1},
		"newline in key":  {Digest: "ab", Key: ok.Key + "\n", Principal: "p"},
		"space in digest": {Digest: "a b", Key: ok.Key, Principal: "p"},
	} {
		if err := d.check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	m := &Manager{log: slog.Default(), connect: func(context.Context) (Engine, error) { return procEngine{}, nil }}
	if err := m.NewSession(Config{}, nil).Detach(); !errors.Is(err, ErrNotDetachable) {
		t.Fatalf("Detach of a plain session: %v", err)
	}
}

// TestDetachableSandboxIsNotStaleWhenItsBridgeIsGone: the stale sweep
// leaves a running detachable sandbox alone whoever started it, and
// removes one that no longer runs.
func TestDetachableSandboxIsNotStaleWhenItsBridgeIsGone(t *testing.T) {
	me := engine.CurrentOwner()
	gone := map[string]string{LabelHost: me.Host, LabelPID: "1", LabelStart: "0", LabelHandle: "ab"}
	if me.IsStaleContainer(ContainerInfo{State: "running", Labels: gone}) {
		t.Fatal("a running detachable sandbox whose bridge is gone was stale")
	}
	if !me.IsStaleContainer(ContainerInfo{State: "exited", Labels: gone}) {
		t.Fatal("an exited detachable sandbox was not stale")
	}
	delete(gone, LabelHandle)
	if !me.IsStaleContainer(ContainerInfo{State: "running", Labels: gone}) {
		t.Fatal("a plain sandbox whose bridge is gone was not stale")
	}
}

// TestPrincipalLabelsNeverShared: principals' keys give labels an engine
// keeps as they are, and no two keys share one: not keys that differ only
// past a label's 63 characters (a cut would join them), nor a key chosen
// to spell another key's hashed label.
func TestPrincipalLabelsNeverShared(t *testing.T) {
	long := strings.Repeat("o", 70)
	victim := "token:alice"
	keys := []string{victim, PrincipalLabel(victim), "token_alice", long + "a", long + "b", "o-alice", "s-1"}
	seen := map[string]string{}
	for _, k := range keys {
		l := PrincipalLabel(k)
		if !digestRE.MatchString(l) {
			t.Errorf("key %q: label %q is no valid label value", k, l)
		}
		if other, ok := seen[l]; ok {
			t.Errorf("keys %q and %q share the label %q", other, k, l)
		}
		seen[l] = k
	}
	if PrincipalLabel("o-alice") != "o-alice" {
		t.Errorf("a key that is a label value was rewritten: %q", PrincipalLabel("o-alice"))
	}
}
