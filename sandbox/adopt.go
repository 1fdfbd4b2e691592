package sandbox

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"strings"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/pyruntime"
	"github.com/codebridge/codebridge/sandbox/engine"
)

// DefaultDetachedIdle is how long a detachable sandbox waits with no frame
// from a bridge and no cell's end before its runtime ends itself, when
// [Detachable.Idle] is zero. It must exceed the longest cell's time limit:
// a cell runs while no bridge speaks.
const DefaultDetachedIdle = 30 * time.Minute

// Detachable makes a session's sandbox outlive the bridge that started it
// (a session handle's sandbox): its container carries the handle's digest
// and the principal's key as labels ([LabelHandle], [LabelPrincipal]), its
// runtime keeps waiting when the bridge goes away without Close, and any
// bridge of the same engine can take it over with [Manager.Adopt]. The
// runtime ends itself after Idle with no bridge; the engine then removes
// the container.
type Detachable struct {
	// Digest is the digest of the session's handle, never the handle
	// itself: labels are readable by whoever lists the engine's
	// containers. Letters, digits, '.', '_' and '-', at most 63 (a
	// Kubernetes label value).
	Digest string
	// Key proves a bridge to the sandbox's runtime when it resumes the
	// channel: a secret derived from the handle (as Digest is, but apart
	// from it), at least 32 bytes. The runtime holds only its SHA-256; no
	// label carries it.
	Key string
	// Principal is the key of the principal the handle is bound to; Adopt
	// refuses a sandbox of another principal as if it did not exist.
	Principal string
	// Idle is the runtime's own deadline; zero means [DefaultDetachedIdle].
	Idle time.Duration
}

// digestRE is what a handle's digest may look like as a label value.
var digestRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,61}[A-Za-z0-9]$|^[A-Za-z0-9]$`)

// check says what is wrong with d, or is nil.
func (d *Detachable) check() error {
	switch {
	case !digestRE.MatchString(d.Digest):
		return errors.New("sandbox: a detachable session's handle digest must be 1 to 63 letters, digits, '.', '_' or '-' (hex or base32 of a hash)")
	case len(d.Key) < 32 || len(d.Key) > 256 || strings.ContainsAny(d.Key, "\x00\n"):
		return errors.New("sandbox: a detachable session's resume key must be 32 to 256 bytes (a secret derived from the handle)")
	case d.Principal == "" || len(d.Principal) > 256:
		return errors.New("sandbox: a detachable session needs its principal's key (at most 256 bytes)")
	case d.Idle < 0:
		return errors.New("sandbox: a detachable session's idle deadline must not be negative: give a positive duration, or 0 for the default")
	}
	return nil
}

// idle is d's deadline, the default applied.
func (d *Detachable) idle() time.Duration {
	if d.Idle == 0 {
		return DefaultDetachedIdle
	}
	return d.Idle
}

// keyHash is what the runtime holds of d's key.
func (d *Detachable) keyHash() string {
	sum := sha256.Sum256([]byte(d.Key))
	return hex.EncodeToString(sum[:])
}

// labels are the labels of d's container.
func (d *Detachable) labels() map[string]string {
	return map[string]string{engine.LabelHandle: d.Digest, engine.LabelPrincipal: PrincipalLabel(d.Principal)}
}

// PrincipalLabel is the value of a detachable sandbox's [LabelPrincipal]
// for the principal's key: the key itself when it is a valid label value
// (a Kubernetes label holds at most 63 letters, digits, '.', '_' and '-')
// that does not begin with "p-", else "p-" and 60 hex digits of its
// SHA-256. An engine never has to rewrite it, so two principals never
// share one (a label cut to 63 characters would join keys that differ
// only further on, and a key spelled as another's hashed label is hashed
// itself).
func PrincipalLabel(key string) string {
	if digestRE.MatchString(key) && !strings.HasPrefix(key, "p-") {
		return key
	}
	sum := sha256.Sum256([]byte("codebridge principal label\x00" + key))
	return "p-" + hex.EncodeToString(sum[:])[:60]
}

// ErrNoSandbox is Adopt's answer when no running sandbox has the handle's
// digest for this principal. A sandbox of another principal gets exactly
// this answer too: a caller cannot learn that it exists.
var ErrNoSandbox = errors.New("sandbox: no running sandbox has this session handle (it ended, expired, or never existed): start a new session")

// Resumed is where an adopted sandbox's runtime was when the channel came
// back.
type Resumed struct {
	// Cell is the cell that runs or last ran (0: none ran yet).
	Cell int64
	// Running is true while that cell runs; its end comes on the adopted
	// channel (its frames are not collected by this slice: a cell the new
	// bridge runs waits behind it).
	Running bool
	// Stdout and Stderr are the cell's output sent so far (the runtime
	// keeps 64 Ki characters a stream; Dropped counts the rest).
	Stdout, Stderr string
	Dropped        int64
	// Done is how the cell ended, when it did (whether or not the bridge
	// that ran it heard it).
	Done *protocol.Done
	// Calls is the ledger of that cell's tool calls, resource reads and
	// prompts as the runtime kept it (nil: none), the ones the previous
	// bridge never answered cancelled.
	Calls *protocol.CellCalls
	// Yours is the largest cell id the runtime read from the channel it
	// resumed on: a bridge taking its own channel back learns whether its
	// last cell came before the switch.
	Yours int64
	// Lost is how many requests the previous bridge never answered; the
	// cell's code got an error for each saying whether it ran is unknown.
	Lost int
}

// Adopt takes over the running detachable sandbox whose handle digest and
// principal cfg.Detachable gives, started by this or another bridge on the
// same engine: it attaches to the container anew, resumes the runtime's
// channel, and returns a ready session on it and where the runtime was.
// It is [ErrNoSandbox] when no such sandbox runs, or it belongs to another
// principal. The adopted sandbox's frames travel over the attach stream.
func (m *Manager) Adopt(ctx context.Context, cfg Config, host Host) (*Session, *Resumed, error) {
	if cfg.Detachable == nil {
		return nil, nil, errors.New("sandbox: Adopt needs a detachable configuration (the handle's digest and principal)")
	}
	if err := cfg.Detachable.check(); err != nil {
		return nil, nil, err
	}
	s := m.NewSession(cfg, host)
	s.mu.Lock()
	err := s.move(stateAdopting)
	s.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	c, r, last, err := s.adopt(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		_ = s.move(stateEmpty)
		return nil, nil, err
	}
	s.cur, s.nextID = c, max(s.nextID, last)
	_ = s.move(stateReady)
	return s, r, nil
}

// adopt finds the sandbox, attaches and resumes; the session is adopting.
// last is the largest cell id the runtime got.
func (s *Session) adopt(ctx context.Context) (c *live, r *Resumed, last int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	eng, err := s.engine(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	ad, ok := eng.(engine.Adopter)
	if !ok {
		return nil, nil, 0, fmt.Errorf("sandbox: %s cannot take over a sandbox another bridge started", eng.Name())
	}
	id, err := findDetached(ctx, eng, s.cfg.Detachable)
	if err != nil {
		return nil, nil, 0, err
	}
	ctr, err := ad.Exec(ctx, id, []string{"python3", "-I", "-u", "-c", pyruntime.Relay()})
	if err != nil {
		return nil, nil, 0, err
	}
	c = s.newLive(ctr, "the sandbox was adopted from another bridge: its frames travel through a relay in it")
	if r, last, err = c.resume(ctx, newFrameReader(c.ctr.Stdout()), s.cfg.Detachable.Key); err != nil {
		c.detach()
		return nil, nil, 0, fmt.Errorf("sandbox: resuming the channel of sandbox %s: %w; the sandbox is left running for its idle deadline", engine.Short(id), err)
	}
	s.log.Debug("sandbox adopted", "container", engine.Short(id), "python", c.python, "cell", r.Cell, "running", r.Running)
	return c, r, last, nil
}

// FindDetached reports whether a running sandbox carries the handle
// digest and principal of cfg (detachable): nil when one does,
// [ErrNoSandbox] when none does (another principal's reads the same),
// without attaching to it. A bridge asks it before it waits for a handle
// another replica holds, so that no handle of another principal, and no
// guessed one, makes it write anything.
func (m *Manager) FindDetached(ctx context.Context, cfg Config) error {
	if cfg.Detachable == nil {
		return errors.New("sandbox: FindDetached needs a detachable configuration (the handle's digest and principal)")
	}
	eng, err := m.Engine(ctx)
	if err != nil {
		return err
	}
	_, err = findDetached(ctx, eng, cfg.Detachable)
	return err
}

// findDetached returns the id of the running container with d's handle
// digest and principal. Another principal's is not found, in the same
// words.
func findDetached(ctx context.Context, eng Engine, d *Detachable) (string, error) {
	list, err := eng.List(ctx)
	if err != nil {
		return "", err
	}
	for _, info := range list {
		if info.State != "running" || info.Labels[engine.LabelHandle] != d.Digest {
			continue
		}
		if subtle.ConstantTimeCompare([]byte(info.Labels[engine.LabelPrincipal]), []byte(PrincipalLabel(d.Principal))) != 1 {
			return "", ErrNoSandbox
		}
		return info.ID, nil
	}
	return "", ErrNoSandbox
}

// newLive wraps a container whose frames travel over its attach stream.
func (s *Session) newLive(ctr Container, why string) *live {
	return &live{ctr: ctr, out: newOutbox(ctr.Stdin()), frames: make(chan protocol.Frame, 16), quit: make(chan struct{}), dead: make(chan struct{}),
		channel: channelAttach, why: why,
		logs: engine.NewLogWriter("sandbox runtime: ", engine.ContainerLogBudget, s.log.With("container", engine.Short(ctr.ID())))}
}

// resume sends the resume frame with key through the relay and reads its
// stream up to the runtime's resumed answer, logging the log frames before
// it; then it starts the reader.
func (c *live) resume(ctx context.Context, fr *frameReader, key string) (*Resumed, int64, error) {
	frame, err := protocol.Encode(protocol.Resume{Key: key})
	if err != nil {
		return nil, 0, err
	}
	if err := c.out.write(ctx, frame); err != nil {
		return nil, 0, fmt.Errorf("writing the resume frame: %w", err)
	}
	got := make(chan resumeAnswer, 1)
	go func() { got <- awaitResumed(fr, c.logs) }()
	select {
	case a := <-got:
		if a.err != nil {
			return nil, 0, a.err
		}
		if a.r.V != protocol.Version {
			return nil, 0, fmt.Errorf("the runtime speaks protocol version %d and this host version %d: it was started by another codebridge build", a.r.V, protocol.Version)
		}
		c.python = a.r.Python
		go c.read(fr)
		return resumedOf(a.r), a.r.Last, nil
	case <-ctx.Done():
		c.detach() // ends the pending read
		<-got
		return nil, 0, fmt.Errorf("waiting for the runtime's answer: %w (is it a detachable sandbox of this codebridge?)", ctx.Err())
	}
}

type resumeAnswer struct {
	r   protocol.Resumed
	err error
}

// awaitResumed reads frames up to the resumed frame, logging log frames;
// any other frame breaks the protocol.
func awaitResumed(fr *frameReader, logs *engine.LogWriter) resumeAnswer {
	for {
		f, err := fr.next()
		if err != nil {
			return resumeAnswer{err: fmt.Errorf("the relay's stream ended before the runtime answered (a wrong key, or no detachable runtime): %w", err)}
		}
		switch f := f.(type) {
		case protocol.Resumed:
			return resumeAnswer{r: f}
		case protocol.Log:
			logs.Frame(f.Level, f.Msg)
		default:
			return resumeAnswer{err: protocolErrorf("sandbox: the runtime sent a %s frame before its resumed answer", clipText(f.Type(), 40))}
		}
	}
}

func resumedOf(r protocol.Resumed) *Resumed {
	out := &Resumed{Lost: r.Lost, Yours: r.Yours, Calls: r.Calls}
	if cell := r.Cell; cell != nil {
		out.Cell, out.Running, out.Stdout, out.Stderr, out.Dropped, out.Done = cell.ID, cell.Running, cell.Stdout, cell.Stderr, cell.Dropped, cell.Done
	}
	return out
}

// detach stops c's reader and writer and lets go of the container's
// streams, leaving it running for another bridge. It runs once, like
// discard, with which it shares the once.
func (c *live) detach() {
	c.gone.Do(func() {
		close(c.quit)
		c.out.close()
		if d, ok := c.ctr.(engine.Detacher); ok {
			d.Detach()
		}
	})
}

// letGo ends the cell of a detachable session whose runtime stopped
// answering: another bridge may hold its channel now (it adopted the
// sandbox, and the newer channel wins), so this bridge detaches the
// sandbox instead of removing it, and never starts another for the
// handle. [Session.LetGo] reports it from then on.
func (cl *cell) letGo(why string) *Result {
	cl.s.letGo.Store(true)
	_ = cl.s.Detach()
	cl.res.Status, cl.res.StateKept = cl.stopping, false
	cl.res.Notice = why + "; this bridge let go of the session's sandbox without removing it (another bridge may have taken the session over, or its code does not stop): the next call with its handle takes it back"
	return cl.finish()
}

// moved reports whether c's runtime said that another host took its
// channel over (a moved frame): its frames end there.
func (c *live) moved() bool {
	select {
	case <-c.dead:
		return errors.Is(c.readErr, errMoved)
	default:
		return false
	}
}

// takeBack resumes, on this bridge's own stream, the channel of c, which
// another bridge took over: the runtime kept the stream waiting, so no
// new relay is needed (an exec costs 60-90 ms; this costs a round trip).
// The session holds the turn; the new live replaces c.
func (s *Session) takeBack(ctx context.Context, c *live) (*live, *Resumed, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	n := c.again(s.log)
	r, last, err := n.resume(ctx, c.fr, s.cfg.Detachable.Key)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	s.cur, s.nextID = n, max(s.nextID, last)
	s.mu.Unlock()
	s.log.Debug("sandbox taken back from another bridge", "container", engine.Short(c.ctr.ID()), "cell", r.Cell, "running", r.Running)
	return n, r, nil
}

// again is a live on c's container and streams after its reader stopped
// at a moved frame: the same outbox and container, a reader to start
// anew. It belongs to the same family of forks.
func (c *live) again(log *slog.Logger) *live {
	fam := c.familyOf()
	n := &live{ctr: c.ctr, out: c.out, frames: make(chan protocol.Frame, 16), quit: make(chan struct{}), dead: make(chan struct{}),
		python: c.python, channel: c.channel, why: c.why, fam: fam,
		logs: engine.NewLogWriter("sandbox runtime: ", engine.ContainerLogBudget, log.With("container", engine.Short(c.ctr.ID())))}
	return n
}

// AwaitMoved waits until the runtime says on this bridge's channel that
// another bridge took it over (a moved frame: the runtime keeps that
// channel waiting, and the next cell takes it back on it), or ctx ends, and
// reports whether it did. A bridge that knows from elsewhere that another
// took the session since (a Lease) waits for the frame on its way, so as
// to take the channel back instead of adopting the sandbox anew.
func (s *Session) AwaitMoved(ctx context.Context) bool {
	s.mu.Lock()
	c := s.cur
	s.mu.Unlock()
	if c == nil {
		return false
	}
	select {
	case <-c.dead:
		return c.moved()
	case <-ctx.Done():
		return false
	}
}

// LetGo reports whether this bridge let go of the session's sandbox after
// its runtime stopped answering a cell: the session is closed here, and
// the sandbox is left to whichever bridge adopts it next.
func (s *Session) LetGo() bool { return s.letGo.Load() }

// ErrNotDetachable is Detach's answer for a session that was not made
// detachable: its sandbox ends with its bridge.
var ErrNotDetachable = errors.New("sandbox: this session is not detachable: Close it instead")

// Detach lets go of a detachable session's sandbox without removing it,
// as a bridge that dies does: the container keeps running, its runtime
// keeps its interpreter and waits for a bridge to adopt it
// ([Manager.Adopt]) until its idle deadline. The session is closed for
// this bridge. A cell still running ends as crashed here; it goes on in
// the sandbox.
func (s *Session) Detach() error {
	if s.cfg.Detachable == nil {
		return ErrNotDetachable
	}
	if !s.closeWith(func(c *live) { c.detach() }) {
		return ErrClosed
	}
	return nil
}

// detachLabels adds a detachable session's labels to spec.
func (s *Session) detachLabels(spec *ContainerSpec) {
	d := s.cfg.Detachable
	if d == nil {
		return
	}
	if spec.Labels == nil {
		spec.Labels = map[string]string{}
	}
	maps.Copy(spec.Labels, d.labels())
	spec.Detachable = true
}
