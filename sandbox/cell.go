package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/sandbox/engine"
)

// cell is one run of code on a live container: it sends the exec frame,
// collects the frames that come back until the cell is done, answers its
// requests, and enforces its time limit. The control path (timer,
// cancellation, grace) never waits on a write to the container.
type cell struct {
	s      *Session
	c      *live
	id     int64
	req    Request
	ctx    context.Context // ends with the cell: cancels its requests
	cancel context.CancelFunc
	done   <-chan struct{} // the caller's cancellation; nil once seen

	res            *Result
	stdout, stderr *clipBuffer
	spill          map[string]*protocol.Spill

	slots    chan struct{} // one token per request in flight
	stopping Status        // why the cell was interrupted, once it was
	grace    <-chan time.Time
	rewind   int  // the n of the rewind(n) the cell asked for (rewind.go)
	fork     bool // the cell called fork() (fork.go)
	heard    bool // a frame came while the cell ran
	retook   bool // the cell took its channel back from another bridge once
}

// newID is the id of the session's next cell.
func (s *Session) newID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return s.nextID
}

func (s *Session) newCell(ctx context.Context, c *live, req Request) *cell {
	cellCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &cell{
		s: s, c: c, id: s.newID(), req: req, ctx: cellCtx, cancel: cancel, done: ctx.Done(),
		res:    &Result{StateKept: true},
		stdout: newClipBuffer(s.cfg.OutputLimit), stderr: newClipBuffer(s.cfg.OutputLimit),
		slots: make(chan struct{}, MaxInFlight),
	}
}

// run sends the cell and waits for its end. The timer runs from before the
// send: a runtime that does not read cannot make a cell wait forever.
func (cl *cell) run() *Result {
	defer cl.cancel()
	defer func() { cl.c.out.cell.CompareAndSwap(cl.id, 0) }()
	timer := time.NewTimer(cl.req.Timeout)
	defer timer.Stop()
	cl.send()
	for {
		select {
		case f, ok := <-cl.c.frames:
			if !ok {
				if res := cl.channelEnded(); res != nil {
					return res
				}
				continue
			}
			cl.heard = true
			if cl.frame(f) {
				return cl.end()
			}
		case <-timer.C:
			cl.interrupt(StatusTimeout)
		case <-cl.done:
			cl.done = nil
			cl.interrupt(StatusCancelled)
		case <-cl.grace:
			why := fmt.Sprintf("the code did not stop within %s of being interrupted", cl.s.cfg.Grace)
			if cl.s.cfg.Detachable != nil {
				return cl.letGo(why)
			}
			return cl.lost(cl.stopping, why)
		}
	}
}

// send sends the cell's exec frame.
func (cl *cell) send() {
	cl.c.out.cell.Store(cl.id)
	exec := protocol.Exec{ID: cl.id, Code: cl.req.Code, Limit: cl.s.cfg.OutputLimit, Stale: cl.s.host.Stale()}
	if cl.req.TOON {
		exec.Render = "toon"
	}
	cl.c.out.send(exec, 0, false, nil)
}

// frame handles one frame from the runtime; true when the cell is done.
func (cl *cell) frame(f protocol.Frame) bool {
	switch f := f.(type) {
	case protocol.Out:
		cl.output(f)
	case protocol.Image:
		if f.ID == cl.id {
			keepImage(cl.res, f, cl.stderr)
		}
	case protocol.RPC:
		cl.request(f)
	case protocol.Done:
		if f.ID != cl.id {
			return false // an earlier cell's, after its end
		}
		cl.doneFrame(f)
		return true
	case malformed:
		cl.malformed(f)
	default:
		cl.debug("ignoring a frame", "type", clipText(f.Type(), 40))
	}
	return false
}

func (cl *cell) output(f protocol.Out) {
	if f.ID != cl.id {
		return // late output of an earlier cell's thread
	}
	if f.Stream == "stderr" {
		cl.stderr.WriteString(f.Data)
	} else {
		cl.stdout.WriteString(f.Data)
	}
	cl.req.Caller.Output(f.Stream, f.Data)
}

func (cl *cell) doneFrame(f protocol.Done) {
	res := cl.res
	if f.Value != nil {
		res.Value, res.HasValue = *f.Value, true
	}
	if f.Error != nil {
		res.Traceback = *f.Error
	}
	cl.spill, cl.rewind, cl.fork = f.Spill, f.Rewind, f.Fork
	switch {
	case cl.stopping != "":
		res.Status = cl.stopping
	case f.Status == "ok":
		res.Status = StatusOK
	default:
		res.Status = StatusError
	}
}

// malformed answers an RPC frame whose fields had the wrong shape with an
// error, when its id could be read, so that the code's call fails at once;
// any other malformed frame is ignored.
func (cl *cell) malformed(f malformed) {
	cl.debug("ignoring a malformed frame", "err", clipText(f.err.Error(), 200))
	if f.err.T == protocol.TRPC && f.err.ID != 0 {
		// The cause is the decoder's verdict on the sandbox's bytes: the reply
		// carries its text only, and its kind stays internal.
		cl.reply(f.err.ID, nil, fmt.Errorf("the bridge could not read this request: %v", f.err.Cause)) //nolint:errorlint // text for the sandbox, not a chain to unwrap
	}
}

// interrupt asks the runtime to stop the cell, once, and gives it the
// grace to do so (the session is stopping). The interrupt goes before
// frames still waiting, and the cell's requests are cancelled: their
// answers would come too late.
func (cl *cell) interrupt(why Status) {
	if cl.stopping != "" {
		return
	}
	cl.stopping = why
	cl.s.mu.Lock()
	_ = cl.s.move(stateStopping) // after Close, the container's end is near
	cl.s.mu.Unlock()
	cl.cancel()
	cl.c.out.send(protocol.Interrupt{ID: cl.id}, 0, true, nil)
	cl.grace = time.After(cl.s.cfg.Grace)
}

// request starts answering f on its own goroutine when a slot is free.
// The runtime waits for a slot before it sends a request (and the host
// frees one before the runtime can read the answer), so only a runtime
// that does not wait (code that went around it) is refused; when the
// answers already waiting to be written pile up, it reads none of them,
// and its requests are dropped.
func (cl *cell) request(f protocol.RPC) {
	if cl.c.out.backlog() > maxBacklog {
		cl.debug("dropping a request: the runtime reads no answers", "id", f.ID)
		return
	}
	select {
	case cl.slots <- struct{}{}:
		go cl.answer(f)
	default:
		cl.reply(f.ID, nil, fmt.Errorf("more than %d requests of this cell are in flight; wait for some to finish (the runtime's own calls do)", MaxInFlight))
	}
}

// answer handles one request and frees its slot before the answer is
// queued: once the runtime reads the answer, it may send its next request.
func (cl *cell) answer(f protocol.RPC) {
	var val []byte
	err := cl.ctx.Err() // an interrupted cell's requests never reach the host
	if err == nil {
		val, err = cl.req.Caller.Answer(cl.ctx, f)
	}
	if err != nil && cl.ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = errors.New("the call was cancelled because the run_python call was stopped")
	}
	<-cl.slots
	cl.reply(f.ID, val, err)
}

// maxBacklog is how many frames may wait to be written to a container
// before its requests are dropped: a runtime that leaves that many
// unread reads none (an honest one has at most MaxInFlight answers out).
const maxBacklog = 4 * MaxInFlight

// reply queues the answer to request id. Answers to an ended cell are
// dropped.
func (cl *cell) reply(id int64, val []byte, err error) {
	done := func(werr error) {
		if werr != nil && !errors.Is(werr, errDropped) && cl.ctx.Err() == nil {
			cl.debug("answering an RPC", "id", id, "err", werr)
		}
	}
	if err != nil {
		cl.c.out.send(protocol.Result{ID: id, Error: protocol.ErrorOf(err)}, cl.id, false, done)
		return
	}
	parts, perr := protocol.ResultParts(id, val)
	if perr != nil {
		cl.c.out.send(protocol.Result{ID: id, Error: protocol.ErrorOf(perr)}, cl.id, false, done)
		return
	}
	cl.c.out.post(&outItem{parts: parts, cell: cl.id, done: done}, false)
}

// containerEnded is the cell's end when the runtime's frames stop.
func (cl *cell) containerEnded() *Result {
	if cl.stopping != "" {
		return cl.lost(cl.stopping, "the code was stopped and the sandbox ended: "+cl.c.ended(cl.ctx))
	}
	return cl.lost(StatusCrashed, "the sandbox died while the code ran: "+cl.c.ended(cl.ctx))
}

// channelEnded is the end of the cell's frames: the container ended, or
// another bridge took the channel over (a moved frame; adopt.go), before
// the cell or as it ran. A cell that heard nothing yet (its exec went to
// the waiting stream) takes the channel back, once, and goes on (nil):
// it sends its exec again when the runtime never read it (it came after
// the switch, and was dropped unread), or takes up where it is. A cell
// that heard frames, or lost its channel twice, lets go of the sandbox.
func (cl *cell) channelEnded() *Result {
	if !cl.c.moved() || cl.s.cfg.Detachable == nil {
		return cl.containerEnded()
	}
	const away = "another bridge took this session over as this call ran, so its answer goes there: the next call with the handle says how the session's last cell ended"
	if cl.heard || cl.retook {
		return cl.letGo(away)
	}
	cl.retook = true
	n, r, err := cl.s.takeBack(cl.ctx, cl.c)
	if err != nil {
		return cl.letGo(away + " (taking it back failed: " + err.Error() + ")")
	}
	cl.c, cl.res.TakenBack = n, r
	tookBack(cl.req.Caller, r)
	switch {
	case r.Yours < cl.id: // never read: send it again, after the cells the other bridge ran
		cl.id = cl.s.newID()
		cl.send()
	case r.Cell == cl.id: // it ran, or runs, sending to the other bridge: what it sent so far
		for stream, data := range map[string]string{"stdout": r.Stdout, "stderr": r.Stderr} {
			if data != "" {
				cl.output(protocol.Out{ID: cl.id, Stream: stream, Data: data})
			}
		}
		if r.Done != nil {
			cl.doneFrame(*r.Done)
			return cl.end()
		}
	}
	return nil
}

// lost replaces the container, which frees every writer stuck on it; the
// session is empty then.
func (cl *cell) lost(status Status, notice string) *Result {
	cl.s.replace(cl.c)
	cl.res.Status, cl.res.StateKept = status, false
	cl.res.Notice = notice + "; the sandbox was restarted, so variables, imports and files from earlier calls are gone"
	return cl.finish()
}

// end finishes a cell whose done frame came: it carries out the rewind
// the cell asked for, if any, and the session is ready for the next cell
// unless the rewind lost the container.
func (cl *cell) end() *Result {
	res := cl.forkIfAsked(cl.rewindIfAsked(cl.finish()))
	if res.StateKept {
		cl.s.settle()
	}
	return res
}

func (cl *cell) finish() *Result {
	cl.res.Stdout = cl.stdout.output(cl.spill["stdout"])
	cl.res.Stderr = cl.stderr.output(cl.spill["stderr"])
	return cl.res
}

// Bounds on the images one result keeps: the frames come from untrusted code.
const (
	maxImages     = 16
	maxImageBytes = 32 << 20 // base64, all images together
)

// imageTypes are the pictures a result may carry; the MIME type comes from
// untrusted code, and clients render what they get.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// keepImage adds the image in f to res, or notes on stderr why it was left
// out.
func keepImage(res *Result, f protocol.Image, stderr *clipBuffer) {
	if !imageTypes[strings.ToLower(f.Mime)] {
		stderr.WriteString(fmt.Sprintf("[codebridge: an image of type %q was left out: only PNG, JPEG, GIF and WebP are shown]\n", clip([]byte(f.Mime), 40)))
		return
	}
	total := len(f.Data)
	for _, im := range res.Images {
		total += len(im.Data)
	}
	if len(res.Images) >= maxImages || total > maxImageBytes {
		stderr.WriteString(fmt.Sprintf("[codebridge: an image of %s was left out: a result keeps at most %d images, %s in all]\n",
			sizeText(int64(len(f.Data))), maxImages, sizeText(maxImageBytes)))
		return
	}
	res.Images = append(res.Images, Image{MIME: strings.ToLower(f.Mime), Data: f.Data})
}

// maxDebugLines bounds the debug lines a container's frames can cause:
// a sandbox decides how many frames it sends, and must not decide how
// much the host logs.
const maxDebugLines = 32

// debug logs a diagnostic about the cell's frames at debug level, up to
// [maxDebugLines] per container; then it says once that it stops.
func (cl *cell) debug(msg string, args ...any) {
	switch n := cl.c.debugLines.Add(1); {
	case n <= maxDebugLines:
		cl.s.log.Debug(msg, args...)
	case n == maxDebugLines+1:
		cl.s.log.Debug("this sandbox's frames caused more diagnostics than the host logs; the rest are dropped", "container", engine.Short(cl.c.ctr.ID()))
	}
}
