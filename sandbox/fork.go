package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/pyruntime"
	"github.com/codebridge/codebridge/sandbox/engine"
)

// Forking a session (docs/rewind.md, "Fork"): a cell calls fork(); the
// runtime forks a second runtime in the same container and answers with
// a forked frame that carries its key; [Manager.Fork] makes a new session
// on that runtime, whose frames travel through the resume relay (an
// engine exec, as for an adopted sandbox). The sessions of one container
// share a [family]: the container is removed when the last of them lets
// go of it; the others only end their own runtime's stream.

// ForkTimeout bounds the wait for the forked frame after a cell that
// called fork(): a fork takes milliseconds.
const ForkTimeout = 10 * time.Second

// MaxForks bounds the runtimes one container holds at once (the first
// one and its forks, forks of forks included): each is a process under the
// container's memory and pids limits, and this bound keeps a fork bomb
// of forks from filling either before the sessions' cap.
const MaxForks = 16

// family counts the sessions whose runtimes share one container.
type family struct {
	mu sync.Mutex
	n  int // sessions that still use the container, one runtime each; at most [MaxForks]
	// spare is a relay started after a fork for the next one, waiting
	// for its first line (the key) before it connects anywhere: the next
	// fork skips the engine's exec (docs/rewind.md, "Fork"). Nil when
	// none waits.
	spare Container
}

// takeSpare returns the waiting relay, if any, and forgets it.
func (f *family) takeSpare() Container {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.spare
	f.spare = nil
	return c
}

// putSpare keeps c as the waiting relay, or lets go of it when the
// family ended or has one already.
func (f *family) putSpare(c Container) {
	f.mu.Lock()
	keep := f.n > 0 && f.spare == nil && f.n < MaxForks
	if keep {
		f.spare = c
	}
	f.mu.Unlock()
	if !keep {
		endRelay(c)
	}
}

// endRelay ends a relay's exec without touching the container: its
// stream ends, and the relay with it.
func endRelay(c Container) {
	if d, ok := c.(engine.Detacher); ok {
		d.Detach()
		return
	}
	_ = c.Stdin().Close()
}

// join counts one more session in f, or says why not.
func (f *family) join() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n >= MaxForks {
		return fmt.Errorf("this sandbox holds %d runtimes (a session and its forks, forks of forks included), the most one container holds: end a fork you no longer need (runtime.end_session), or fork a session of another sandbox", MaxForks)
	}
	f.n++
	return nil
}

// leave counts one session fewer and reports whether it was the last;
// the last also ends the waiting relay.
func (f *family) leave() bool {
	f.mu.Lock()
	f.n--
	last, spare := f.n <= 0, f.spare
	if last {
		f.spare = nil
	}
	f.mu.Unlock()
	if last && spare != nil {
		endRelay(spare)
	}
	return last
}

// familyOf is c's family, made on first use (a container's first session
// counts as one).
func (c *live) familyOf() *family {
	c.famOnce.Do(func() {
		if c.fam == nil {
			c.fam = &family{n: 1}
		}
	})
	return c.fam
}

// lastOfFamily reports whether c's session is the last that uses its
// container (counting it out), so that discard removes the container.
func (c *live) lastOfFamily() bool {
	return c.familyOf().leave()
}

// forkIfAsked waits for the forked frame of a cell that called fork(),
// holding the session's turn: nothing else is sent to the runtime
// meanwhile. A runtime that no init follows yet asks for a handover
// first (protocol.Handover): the host sends it and waits for the forked
// frame of the copy that took the channel. A cell that was stopped, or
// lost its container, forks nothing.
func (cl *cell) forkIfAsked(res *Result) *Result {
	if !cl.fork || cl.stopping != "" || !res.StateKept {
		return res
	}
	r, lost := awaitAnswer[protocol.Forked](cl, "fork", ForkTimeout)
	if lost == nil && !r.OK && r.Handover {
		start := time.Now()
		cl.c.out.send(protocol.Handover{}, 0, false, nil)
		r, lost = awaitAnswer[protocol.Forked](cl, "fork", ForkTimeout)
		cl.s.log.Debug("the runtime became its copy's init before its first fork", "took", time.Since(start))
		if lost == nil && r.Handover {
			r = protocol.Forked{Error: "the runtime asked for a second handover"}
		}
	}
	if lost != nil {
		return lost
	}
	res.Forked = boundForked(r)
	return res
}

// boundForked cuts what the runtime chose to say.
func boundForked(r protocol.Forked) *protocol.Forked {
	r.Error, r.Dir = clipText(r.Error, 2000), clipText(r.Dir, 200)
	if len(r.Threads) > maxRewoundNames {
		r.Threads = r.Threads[:maxRewoundNames]
	}
	for i, t := range r.Threads {
		r.Threads[i] = clipText(t, maxRewoundName)
	}
	if r.Files != nil {
		r.Files.Reason = clipText(r.Files.Reason, 400)
	}
	return &r
}

// ErrForkNeedsExec is Fork's answer on an engine that cannot run a
// command in a running container: the fork's runtime was made, and ends
// by itself when no host reaches it.
var ErrForkNeedsExec = errors.New("sandbox: fork needs an engine that can run the resume relay in a running container (Docker or Podman; on Kubernetes, a build whose kube engine execs the relay)")

// Fork makes a new session on the runtime that parent's last cell forked
// (f, from its result): same container, its own channel through the
// resume relay. cfg and host are the fork's own. A fork that cannot be
// reached is refused with what to do, and parent is left as it was.
func (m *Manager) Fork(ctx context.Context, parent *Session, f *protocol.Forked, cfg Config, host Host) (*Session, error) {
	if f == nil || !f.OK || f.Key == "" {
		return nil, errors.New("sandbox: no fork to take: the cell's fork() did not make one")
	}
	parent.mu.Lock()
	pc := parent.current()
	parent.mu.Unlock()
	if pc == nil {
		return nil, errors.New("sandbox: the forked session's sandbox is gone")
	}
	fam := pc.familyOf()
	if err := fam.join(); err != nil {
		return nil, err
	}
	s := m.NewSession(cfg, host)
	c, err := s.reach(ctx, fam, pc.ctr.ID(), f.Key)
	if err != nil {
		fam.leave()
		return nil, err
	}
	c.fam = fam
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.move(stateAdopting); err != nil {
		c.detach()
		fam.leave()
		return nil, err
	}
	s.cur = c
	_ = s.move(stateReady)
	return s, nil
}

// relayCmd runs the resume relay in a container.
var relayCmd = []string{"python3", "-I", "-u", "-c", pyruntime.Relay()}

// reach resumes the fork's channel with key through a relay in container
// id: fam's waiting relay when there is one (a fresh exec if it fails),
// else a fresh exec; then it starts the next fork's relay.
func (s *Session) reach(ctx context.Context, fam *family, id, key string) (*live, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	eng, err := s.engine(ctx)
	if err != nil {
		return nil, err
	}
	ad, ok := eng.(engine.Adopter)
	if !ok {
		return nil, ErrForkNeedsExec
	}
	start := time.Now()
	var c *live
	if spare := fam.takeSpare(); spare != nil {
		c, err = s.resumeThrough(ctx, spare, key)
	}
	if c == nil {
		var ctr Container
		if ctr, err = ad.Exec(ctx, id, relayCmd); err != nil {
			return nil, err
		}
		c, err = s.resumeThrough(ctx, ctr, key)
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: reaching the fork in container %s: %w (a container at its process limit cannot run the relay: end a fork you no longer need); the fork's runtime ends by itself", engine.Short(id), err)
	}
	s.log.Debug("fork reached", "container", engine.Short(id), "took", time.Since(start))
	go s.spareRelay(ad, fam, id)
	return c, nil
}

// resumeThrough resumes the channel with key through the relay ctr.
func (s *Session) resumeThrough(ctx context.Context, ctr Container, key string) (*live, error) {
	c := s.newLive(ctr, "a fork: its frames travel through a relay in its parent's container")
	if _, _, err := c.resume(ctx, newFrameReader(c.ctr.Stdout()), key); err != nil {
		c.detach()
		return nil, err
	}
	return c, nil
}

// spareRelay starts the relay the next fork in container id takes.
func (s *Session) spareRelay(ad engine.Adopter, fam *family, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.StartTimeout)
	defer cancel()
	ctr, err := ad.Exec(ctx, id, relayCmd)
	if err != nil {
		s.log.Debug("no relay ready for the next fork", "container", engine.Short(id), "err", err)
		return
	}
	fam.putSpare(ctr)
}

// endWait bounds writing the end frame to a runtime that leaves its
// container to its forks.
const endWait = time.Second

// sendEnd tells c's runtime to exit (a detachable one would otherwise
// wait for another bridge until its idle deadline, while its forks keep
// the container); closing its stream ends the others anyway.
func (c *live) sendEnd() {
	frame, err := protocol.Encode(protocol.End{})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), endWait)
	defer cancel()
	_ = c.out.write(ctx, frame)
}

// letGoStreams ends this bridge's streams to c's runtime without removing
// the container: the runtime reads the end of its channel and exits,
// and the other runtimes of its family go on.
func (c *live) letGoStreams() { endRelay(c.ctr) }
