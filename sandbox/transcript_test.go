package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
	"golang.org/x/tools/txtar"
)

// The transcripts in testdata/protocol are real exchanges between this
// host and the runtime, recorded with -update from the runtime running
// as a local process. This test replays each against the session, with a
// scripted runtime in place of the real one: the host must send exactly
// the frames the transcript has. pyruntime/tests/test_transcripts.py
// replays the same files against the real runtime, so a frame field
// renamed on either side fails a unit test on that side.
//
// A transcript's "exchange" section has one frame per line, "host: " or
// "runtime: " and the JSON; "*" as a value matches any value.
var update = flag.Bool("update", false, "record testdata/protocol/*.txtar from the real runtime")

// scenario is what a transcript records: the cells a bridge runs, the
// files it puts, and the answers of a canned upstream.
type scenario struct {
	name, about string
	steps       []step
}

// channelOf says how a scenario's frames travel: "" the attach stream
// (configured), "direct" the bridge's socket, "refused" the attach stream
// after the runtime could not connect.
func channelOf(sc scenario) string {
	return map[string]string{"channel": "direct", "channel-refused": "refused"}[sc.name]
}

// step is one cell (code, with TOON or not), one Put, or (adopt) the
// session's detach and its adoption by another manager.
type step struct {
	code  string
	toon  bool
	put   []protocol.File
	adopt bool
}

// transcriptDetachable is the detachable configuration of the transcripts
// that adopt; the recorder stars its key and the key's hash.
var transcriptDetachable = &Detachable{Digest: "transcript", Key: strings.Repeat("transcript-key-", 3), Principal: "p", Idle: time.Hour}

// adopts reports whether sc detaches and adopts its session.
func adopts(sc scenario) bool {
	return slices.ContainsFunc(sc.steps, func(st step) bool { return st.adopt })
}

var scenarios = []scenario{
	{"cells", "Cells that print, end in a value, raise, and ask for TOON.", []step{
		{code: "print('hello')"},
		{code: "x = 6\nx * 7"},
		{code: "1 / 0"},
		{code: "[{'id': 1, 'name': 'a'}, {'id': 2, 'name': 'b'}]", toon: true},
	}},
	{"rpc", "A cell that lists servers, calls a tool and gets a tool error.", []step{
		{code: "[s['name'] for s in await runtime.list_servers(detailed=True)]"},
		{code: "await mcp_demo.echo(message='hi')"},
		{code: "try:\n    await mcp_demo.fail(message='no')\nexcept ToolError as e:\n    print('refused:', e)"},
	}},
	{"errors", "A call the host refuses: the result's error carries its kind, and the runtime raises its class.", []step{
		{code: "try:\n    await call_tool('demo', 'locked', {})\nexcept PermissionDenied as e:\n    print(type(e).__name__, e.kind, '-', e)"},
	}},
	{"put", "Files put between cells.", []step{
		{put: []protocol.File{{Path: "/tmp/codebridge-transcript/a.txt", Data: []byte("from the host")}}},
		{code: "open('/tmp/codebridge-transcript/a.txt').read()"},
	}},
	{"channel", "The direct channel's start-up: the host offers its socket over stdin, the runtime connects and proves itself with the secret, and every later frame travels over the socket.", []step{
		{code: "print('over the socket')"},
		{code: "[s['name'] for s in await runtime.list_servers(detailed=True)]"},
	}},
	{"rewind", "A cell asks for rewind(1): its done frame says so, the host sends rewind and nothing else, and the checkpoint that took over answers rewound; the next cell sees the state before the undone cell. Recorded with CODEBRIDGE_INIT=subreaper (the loader's init, as a local process).", []step{
		{code: "a = 1"},
		{code: "a = 2"},
		{code: "rewind(1)"},
		{code: "a"},
	}},
	{"channel-refused", "The runtime cannot reach the offered socket: it says why on stdout, and the frames stay on stdin and stdout.", []step{
		{code: "print('over the attach stream')"},
	}},
	{"resume", "A detachable sandbox (hello idle and resume): its bridge lets go (its stdin closes), another resumes the channel through the relay with the key, learns where the runtime was, and finds the variables.", []step{
		{code: "x = 41\nprint('set')"},
		{adopt: true},
		{code: "x + 1"},
	}},
}

// cannedHost answers like a small upstream called "demo".
type cannedHost struct{}

func (cannedHost) Servers() []protocol.ServerInfo {
	return []protocol.ServerInfo{{Name: "demo", Description: "A canned server"}}
}
func (cannedHost) StartFiles() []protocol.File { return nil }
func (cannedHost) Stale() []string             { return nil }
func (cannedHost) Output(string, string)       {}
func (cannedHost) Answer(_ context.Context, rpc protocol.RPC) (json.RawMessage, error) {
	switch rpc.Method {
	case protocol.MListServers:
		return json.RawMessage(`[{"name":"demo","description":"A canned server","running":true}]`), nil
	case protocol.MListTools:
		return json.RawMessage(`[{"name":"echo","description":"Echo.","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}}},` +
			`{"name":"fail","description":"Fail.","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}}}]`), nil
	case protocol.MCallTool:
		var p protocol.CallToolParams
		_ = json.Unmarshal(rpc.Params, &p)
		var a struct{ Message string }
		_ = json.Unmarshal(p.Arguments, &a)
		if p.Tool == "locked" {
			return nil, &protocol.KindError{Kind: protocol.KindDenied, Err: errors.New("tool demo.locked was denied: the policy does not allow it")}
		}
		res, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": a.Message}}, "isError": p.Tool == "fail"})
		return res, nil
	}
	return nil, fmt.Errorf("unexpected %s", rpc.Method)
}

func transcriptPath(name string) string {
	return filepath.Join("..", "testdata", "protocol", name+".txtar")
}

func TestTranscripts(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			if *update {
				record(t, sc)
				return
			}
			replay(t, sc)
		})
	}
}

// play runs the scenario's steps on a session whose engine is eng; why,
// when not nil, explains a failure (the scripted runtime's verdict).
func play(t *testing.T, sc scenario, eng Engine, why func() error) {
	t.Helper()
	fail := func(format string, a ...any) {
		t.Helper()
		if why != nil {
			format, a = format+" (the scripted runtime: %v)", append(a, why())
		}
		t.Fatalf(format, a...)
	}
	m := &Manager{log: slog.Default(), connect: func(context.Context) (Engine, error) { return eng, nil }}
	cfg := Config{OutputLimit: 1000, Channel: ChannelAuto}
	if channelOf(sc) == "" {
		cfg.Channel = ChannelAttach
	}
	if adopts(sc) {
		cfg.Detachable = transcriptDetachable
	}
	s := m.NewSession(cfg, cannedHost{})
	defer func() { s.Close() }()
	ctx := context.Background()
	for _, st := range sc.steps {
		if st.adopt {
			if err := s.Detach(); err != nil {
				fail("%v", err)
			}
			var err error
			if s, _, err = m.Adopt(ctx, cfg, cannedHost{}); err != nil {
				fail("%v", err)
			}
			continue
		}
		if st.put != nil {
			if err := s.Put(ctx, st.put); err != nil {
				fail("%v", err)
			}
			continue
		}
		res, err := s.Run(ctx, Request{Code: st.code, Timeout: time.Minute, TOON: st.toon, Caller: cannedHost{}})
		if err != nil {
			fail("%v", err)
		}
		if res.Status != StatusOK && res.Status != StatusError {
			fail("%q: status %s: %s", st.code, res.Status, res.Notice)
		}
	}
}

// record runs the scenario against the real runtime and writes what
// crossed the channel.
func record(t *testing.T, sc scenario) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("recording needs python3")
	}
	rec := &recorder{}
	play(t, sc, recordingEngine{rec: rec, channel: channelOf(sc), t: t, made: &madeBox{}}, nil)
	ar := &txtar.Archive{
		Comment: []byte(sc.about + "\nRecorded from the real runtime: go test ./sandbox -run TestTranscripts -update\n"),
		Files:   []txtar.File{{Name: "exchange", Data: rec.bytes()}},
	}
	if err := os.WriteFile(transcriptPath(sc.name), txtar.Format(ar), 0o644); err != nil {
		t.Fatal(err)
	}
}

// replay runs the scenario against a scripted runtime that checks each
// frame the host sends against the transcript.
func replay(t *testing.T, sc scenario) {
	ar, err := txtar.ParseFile(transcriptPath(sc.name))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range ar.Files {
		if f.Name == "exchange" {
			lines = strings.Split(strings.TrimSpace(string(f.Data)), "\n")
		}
	}
	if len(lines) == 0 {
		t.Fatal("the transcript has no exchange")
	}
	eng := &scriptEngine{t: t, lines: lines, channel: channelOf(sc), relays: make(chan *scriptContainer, 1)}
	play(t, sc, eng, func() error { return eng.ctr.wait() })
	if eng.ctr != nil {
		if err := eng.ctr.wait(); err != nil {
			t.Fatal(err)
		}
	}
}

// recorder keeps the frames each side wrote, in order, one per line.
type recorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *recorder) add(side string, line []byte) {
	line = bytes.TrimSpace(line)
	if f, err := protocol.Decode(line); err == nil {
		switch f := f.(type) { // the fields that differ by machine and run
		case protocol.Ready:
			line = bytes.Replace(line, []byte(`"python":"`+f.Python+`"`), []byte(`"python":"*"`), 1)
		case protocol.Channel:
			line = bytes.TrimSpace(must(protocol.Encode(protocol.Channel{Path: star(f.Path), Secret: star(f.Secret), Error: star(f.Error)})))
		case protocol.Connect:
			line = bytes.TrimSpace(must(protocol.Encode(protocol.Connect{Secret: "*"})))
		case protocol.Hello:
			if f.Resume != "" {
				line = bytes.Replace(line, []byte(`"resume":"`+f.Resume+`"`), []byte(`"resume":"*"`), 1)
			}
		case protocol.Resume:
			line = bytes.TrimSpace(must(protocol.Encode(protocol.Resume{Key: "*"})))
		case protocol.Resumed:
			line = bytes.Replace(line, []byte(`"python":"`+f.Python+`"`), []byte(`"python":"*"`), 1)
		}
	}
	r.mu.Lock()
	r.lines = append(r.lines, side+": "+string(line))
	r.mu.Unlock()
}

// star is "*" for a value that is set.
func star(s string) string {
	if s == "" {
		return ""
	}
	return "*"
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func (r *recorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return []byte(strings.Join(r.lines, "\n") + "\n")
}

// recordingEngine starts the real runtime as a local process and records
// both directions of its frame channel.
type recordingEngine struct {
	procEngine
	rec     *recorder
	channel string
	t       *testing.T
	made    *madeBox // the container started, for List and Exec
}

// madeBox holds the one container a transcript's engine started.
type madeBox struct {
	mu     sync.Mutex
	ctr    Container
	labels map[string]string
}

func (b *madeBox) set(c Container, labels map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ctr, b.labels = c, labels
}

func (b *madeBox) list() []ContainerInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctr == nil {
		return nil
	}
	return []ContainerInfo{{ID: b.ctr.ID(), State: "running", Labels: b.labels}}
}

func (b *madeBox) get() Container {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ctr
}

func (e recordingEngine) List(context.Context) ([]ContainerInfo, error) { return e.made.list(), nil }

// Exec runs the relay as a local process and records both directions of
// its stream.
func (e recordingEngine) Exec(ctx context.Context, _ string, cmd []string) (Container, error) {
	c, err := e.Start(ctx, ContainerSpec{Cmd: cmd})
	if err != nil {
		return nil, err
	}
	return &relayed{Container: c, runtime: e.made.get()}, nil
}

// relayed is the relay's process, standing for the container it reaches.
type relayed struct {
	Container
	runtime Container
}

func (r *relayed) ID() string { return r.runtime.ID() }
func (r *relayed) Remove(ctx context.Context) error {
	_ = r.Container.Remove(ctx)
	return r.runtime.Remove(ctx)
}

// ChannelPath gives the runtime a socket of the recorder's, which relays
// each line to the bridge's socket in dir and back, recording it.
func (e recordingEngine) ChannelPath(dir string) (string, error) {
	switch e.channel {
	case "":
		return "", errors.New("the transcript has no direct channel")
	case "refused":
		return filepath.Join(e.t.TempDir(), "nothing-here"), nil
	}
	relay := e.t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(relay, channelSocket))
	if err != nil {
		return "", err
	}
	go func() {
		defer ln.Close()
		rt, err := ln.Accept()
		if err != nil {
			return
		}
		bridge, err := net.Dial("unix", filepath.Join(dir, channelSocket))
		if err != nil {
			rt.Close()
			return
		}
		go recordLines(e.rec, "host", bridge, rt)
		recordLines(e.rec, "runtime", rt, bridge)
	}()
	return relay, nil
}

// recordLines copies lines from r to w, recording each before it goes on.
func recordLines(rec *recorder, side string, r io.ReadCloser, w io.WriteCloser) {
	defer w.Close()
	defer r.Close()
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			rec.add(side, line)
			if _, werr := w.Write(line); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (e recordingEngine) Start(ctx context.Context, spec ContainerSpec) (Container, error) {
	c, err := e.procEngine.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	p := c.(*proc)
	pr, pw := io.Pipe()
	go func() { // each line is recorded before the host can read it
		r := bufio.NewReader(p.stdout)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				e.rec.add("runtime", line)
				if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	rp := &recordedProc{proc: p, out: pr, in: &hostTee{w: p.stdin, rec: e.rec}}
	if spec.Image != "" || e.made.get() == nil { // the runtime, not a relay
		e.made.set(rp, spec.Labels)
	}
	return rp, nil
}

type recordedProc struct {
	*proc
	out io.Reader
	in  io.WriteCloser
}

func (r *recordedProc) Stdout() io.Reader     { return r.out }
func (r *recordedProc) Stdin() io.WriteCloser { return r.in }

// Detach closes the runtime's stdin, as the engine does when a bridge's
// attach ends.
func (r *recordedProc) Detach() { r.stdin.Close() }

// hostTee records the host's frames, after the bootstrap bytes.
type hostTee struct {
	w       io.WriteCloser
	rec     *recorder
	started bool
	buf     []byte
}

func (h *hostTee) Write(p []byte) (int, error) {
	n, err := h.w.Write(p)
	if !h.started {
		if bytes.HasPrefix(p, []byte(`{"t":"hello"`)) || bytes.HasPrefix(p, []byte(`{"t":"channel"`)) || bytes.HasPrefix(p, []byte(`{"t":"resume"`)) {
			h.started = true
		} else {
			return n, err
		}
	}
	h.buf = append(h.buf, p...)
	for {
		i := bytes.IndexByte(h.buf, '\n')
		if i < 0 {
			break
		}
		h.rec.add("host", h.buf[:i])
		h.buf = h.buf[i+1:]
	}
	return n, err
}

func (h *hostTee) Close() error { return h.w.Close() }

// scriptEngine starts a scripted runtime that plays the transcript.
type scriptEngine struct {
	procEngine
	t       *testing.T
	lines   []string
	channel string
	ctr     *scriptContainer
	labels  map[string]string
	relays  chan *scriptContainer // the streams of each Exec, for the script
}

func (e *scriptEngine) List(context.Context) ([]ContainerInfo, error) {
	if e.ctr == nil {
		return nil, nil
	}
	return []ContainerInfo{{ID: e.ctr.ID(), State: "running", Labels: e.labels}}, nil
}

// Exec gives the script a new stream, which it takes at the host's resume
// frame.
func (e *scriptEngine) Exec(context.Context, string, []string) (Container, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	e.relays <- &scriptContainer{in: inW, out: outR, hostR: inR, rtW: outW}
	return &scriptContainer{in: inW, out: outR}, nil
}

// ChannelPath lets the scripted runtime reach the bridge's socket where
// the host has it, in the transcripts that use the direct channel.
func (e *scriptEngine) ChannelPath(dir string) (string, error) {
	if e.channel == "" {
		return "", errors.New("the transcript has no direct channel")
	}
	return dir, nil
}

func (e *scriptEngine) Start(_ context.Context, spec ContainerSpec) (Container, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &scriptContainer{in: inW, out: outR, done: make(chan error, 1)}
	e.ctr, e.labels = c, spec.Labels
	go func() { c.done <- script(e.lines, inR, outW, e.relays) }()
	return c, nil
}

// script plays the runtime's side: it skips the bootstrap, checks each
// host frame against its line, and writes each runtime line. A channel
// frame from the host gives the socket and the secret; the runtime's
// connect line then opens the socket, which carries every later frame.
func script(lines []string, in io.Reader, out io.WriteCloser, relays <-chan *scriptContainer) error {
	defer func() { out.Close() }()
	r := bufio.NewReaderSize(in, 1<<20)
	var header [16]byte
	if _, err := io.ReadFull(r, header[:]); err != nil {
		return err
	}
	var n int64
	if _, err := fmt.Sscan(strings.TrimSpace(string(header[:])), &n); err != nil {
		return fmt.Errorf("the bootstrap's length header %q: %w", header[:], err)
	}
	if _, err := io.CopyN(io.Discard, r, n); err != nil {
		return err
	}
	var offer protocol.Channel
	var w io.Writer = out
	for i, line := range lines {
		side, frame, _ := strings.Cut(line, ": ")
		if side == "runtime" {
			if err := roundTrips(frame); err != nil {
				return fmt.Errorf("line %d: %w", i+1, err)
			}
			if strings.HasPrefix(frame, `{"t":"connect"`) {
				conn, err := net.Dial("unix", offer.Path)
				if err != nil {
					return fmt.Errorf("line %d: %w", i+1, err)
				}
				defer conn.Close()
				r, w = bufio.NewReaderSize(conn, 1<<20), conn
				frame = string(bytes.TrimSpace(must(protocol.Encode(protocol.Connect{Secret: offer.Secret}))))
			}
			if _, err := io.WriteString(w, frame+"\n"); err != nil {
				return err
			}
			continue
		}
		if strings.HasPrefix(frame, `{"t":"resume"`) { // a new host, through a relay
			relay := <-relays
			out.Close()
			r, w, out = bufio.NewReaderSize(relay.hostR, 1<<20), relay.rtW, relay.rtW
		}
		got, err := r.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("line %d: the host sent nothing more, want %s", i+1, frame)
		}
		if !matches(frame, got) {
			return fmt.Errorf("line %d: the host sent\n  %s\nwant\n  %s", i+1, bytes.TrimSpace(got), frame)
		}
		if f, err := protocol.Decode(got); err == nil {
			if ch, ok := f.(protocol.Channel); ok {
				offer = ch
			}
		}
	}
	return nil
}

// roundTrips checks that the host's type for a runtime frame keeps every
// field of it: a field renamed in package protocol would be dropped here.
func roundTrips(line string) error {
	f, err := protocol.Decode([]byte(line))
	if err != nil {
		return err
	}
	again, err := protocol.Encode(f)
	if err != nil {
		return err
	}
	if !matches(line, again) {
		return fmt.Errorf("the host's %s type does not keep the frame whole:\n  runtime: %s\n  host:    %s", f.Type(), line, bytes.TrimSpace(again))
	}
	return nil
}

// matches compares a transcript frame with one sent, "*" matching any
// value.
func matches(want string, got []byte) bool {
	var w, g any
	if json.Unmarshal([]byte(want), &w) != nil || json.Unmarshal(got, &g) != nil {
		return false
	}
	return match(w, g)
}

func match(w, g any) bool {
	if w == "*" {
		return true
	}
	switch w := w.(type) {
	case map[string]any:
		gm, ok := g.(map[string]any)
		if !ok || len(gm) != len(w) {
			return false
		}
		for k, v := range w {
			if gv, ok := gm[k]; !ok || !match(v, gv) {
				return false
			}
		}
		return true
	case []any:
		ga, ok := g.([]any)
		if !ok || len(ga) != len(w) {
			return false
		}
		for i := range w {
			if !match(w[i], ga[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(w, g)
}

// scriptContainer is the container of a scripted runtime.
type scriptContainer struct {
	in   *io.PipeWriter
	out  *io.PipeReader
	done chan error
	once sync.Once
	err  error

	hostR *io.PipeReader // a relay's: the script's ends of its stream
	rtW   *io.PipeWriter
}

// Detach lets go of the stream, as a bridge that dies does.
func (c *scriptContainer) Detach() { c.in.Close() }

func (c *scriptContainer) ID() string            { return "script" }
func (c *scriptContainer) Stdin() io.WriteCloser { return c.in }
func (c *scriptContainer) Stdout() io.Reader     { return c.out }
func (c *scriptContainer) Exited(context.Context, time.Duration) string {
	return "the script ended"
}
func (c *scriptContainer) Remove(context.Context) error {
	c.in.Close()
	c.out.Close()
	return nil
}

// wait returns the script's verdict.
func (c *scriptContainer) wait() error {
	c.once.Do(func() { c.err = <-c.done })
	return c.err
}
