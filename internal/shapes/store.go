package shapes

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/bits"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/codebridge/codebridge/internal/statedir"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of what a [Book] keeps.
const (
	// MaxTools is how many tools of one server have a shape kept.
	MaxTools = 256
	// MaxResult is the largest result observed, in bytes of JSON: reading
	// a larger one would cost more than its shape is worth (its keys are
	// most likely those of the smaller results of the same tool).
	MaxResult = 1 << 20
	// maxFile is the largest shapes file written or read back: MaxTools
	// shapes of MaxNodes nodes fit unless their keys are long and need
	// escapes; a server whose shapes grow past it keeps the file it has
	// (and the shapes in memory), and a larger file is not read.
	maxFile = 8 << 20
)

// Observed is what a [Book] holds of one tool.
type Observed struct {
	Def    string `json:"def"`              // the hash of the tool's definition
	Calls  int    `json:"calls"`            // results merged into Shape
	Errors int    `json:"errors,omitempty"` // results with isError, not merged
	Shape  *Node  `json:"shape,omitempty"`

	text string // Shape.Render(), once made
}

// rendered is the shape's rendering, made once per change.
func (o *Observed) rendered() string {
	if o.text == "" && o.Shape != nil {
		o.text = o.Shape.Render()
	}
	return o.text
}

// file is one server's shapes file.
type file struct {
	Server string               `json:"server"`
	Tools  map[string]*Observed `json:"tools"`
}

// maxPending is how many bytes of results may wait, in all the books of
// a [Store], for its writer to merge them; an observation past it is
// merged on its caller's path instead (its file is still written by the
// writer), so that a writer behind its callers holds at most this much.
const maxPending = 8 << 20

// Store is the shapes of every principal in one state directory. An empty
// directory keeps them in memory only. What its books observe is merged,
// and their files written, by one writer of the store's off the path of
// the calls that observed it ([Book.Observe]); Close writes what is left.
type Store struct {
	root statedir.Dir
	log  *slog.Logger
	w    backlog // the writer

	mu    sync.Mutex
	books map[string]*Book // by principal key
}

// backlog is a store's merging and writing of observations: a goroutine,
// started by the first observation, woken by each (wakes that come while
// it works coalesce: one round then merges all that waited, and writes
// each file that changed once).
type backlog struct {
	budget  int64        // maxPending (a field for tests)
	pending atomic.Int64 // bytes of results waiting in the books
	closed  atomic.Bool  // Close began: observations are merged and written by their callers
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{} // closed when the goroutine ended

	mu      sync.Mutex
	started bool // the goroutine was started (or, in tests, is not to be)
	running bool // the goroutine runs: Close stops it
}

// Open returns the store of d; nothing is read or written until a shape
// is asked for or observed. log receives what could not be kept.
func Open(d statedir.Dir, log *slog.Logger) *Store {
	if log == nil {
		log = slog.Default()
	}
	s := &Store{root: d, log: log, books: map[string]*Book{}}
	s.w = backlog{budget: maxPending, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	return s
}

// Book is the shapes kept in the place of principal key ("" is the
// local user's and the shared place): one book per place, whichever
// session asks.
func (s *Store) Book(key string) *Book {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.books[key]
	if !ok {
		dir := s.root
		if dir != "" {
			dir = dir.Of(key)
		}
		b = &Book{dir: dir, log: s.log, store: s, servers: map[string]*file{}, defs: map[*mcp.Tool]string{}, dirty: map[string]bool{}}
		s.books[key] = b
	}
	return b
}

// Close merges what the books observed and writes their files, and
// stops the writer; observations made after it are merged and written
// by their callers. It may be called more than once.
func (s *Store) Close() error {
	s.w.closed.Store(true)
	s.w.mu.Lock()
	running := s.w.running
	s.w.running = false
	s.w.started = true // none starts from now on
	s.w.mu.Unlock()
	if running {
		close(s.w.stop)
		<-s.w.done
	}
	s.flush(true)
	return nil
}

// notify wakes the writer, starting it on the first observation.
func (s *Store) notify() {
	s.w.mu.Lock()
	if !s.w.started {
		s.w.started, s.w.running = true, true
		go s.run()
	}
	s.w.mu.Unlock()
	select {
	case s.w.wake <- struct{}{}:
	default: // a wake is waiting already: the round it starts takes this one too
	}
}

// run is the writer: each wake, it merges what every book observed and
// writes the files that changed; at Close, it does so once more.
func (s *Store) run() {
	defer close(s.w.done)
	for {
		select {
		case <-s.w.wake:
			s.flush(false)
		case <-s.w.stop:
			return
		}
	}
}

// flush merges what every book observed and writes the files that are
// due; all writes every file behind what its book holds.
func (s *Store) flush(all bool) {
	s.mu.Lock()
	books := make([]*Book, 0, len(s.books))
	for _, b := range s.books {
		books = append(books, b)
	}
	s.mu.Unlock()
	for _, b := range books {
		b.mu.Lock()
		b.drain()
		b.write(all)
		b.mu.Unlock()
	}
}

// Book is the shapes of one place: per server and tool, read from its
// files on first use and written back when they change.
type Book struct {
	dir   statedir.Dir
	log   *slog.Logger
	store *Store

	mu      sync.Mutex
	servers map[string]*file
	defs    map[*mcp.Tool]string // definition hashes of listed tools
	dirty   map[string]bool      // servers whose file is behind what the book holds: true when it is due

	pmu     sync.Mutex
	pending []observation // observed, not merged yet, in order
}

// observation is one result observed and not merged yet.
type observation struct {
	server  string
	tool    *mcp.Tool
	raw     json.RawMessage // nil for an error: its content is not read
	isError bool
	mask    Mask
}

// Observe records one result (a CallToolResult as JSON, as the sandbox
// gets it) of tool: its shape is merged into what the book holds of the
// tool (anew when the tool's definition changed), or, when isError (as
// the caller decided it), it is counted as an error. A tool that
// declares an outputSchema is not observed: its schema says what it
// returns. Observe does not wait for the merge nor for the file: the
// store's writer does both, so raw is kept until then and must not
// change. Only when results wait past maxPending does the caller merge
// its own.
func (b *Book) Observe(server string, tool *mcp.Tool, raw json.RawMessage, isError bool, mask Mask) {
	if tool == nil || tool.OutputSchema != nil {
		return
	}
	if len(raw) > MaxResult {
		return
	}
	o := observation{server: server, tool: tool, raw: raw, isError: isError, mask: mask}
	if isError {
		o.raw = nil
	}
	w := &b.store.w
	if w.closed.Load() {
		b.mergeNow(o)
		return
	}
	if w.pending.Add(int64(len(o.raw))) > w.budget {
		w.pending.Add(-int64(len(o.raw)))
		b.mergeNow(o)
		return
	}
	b.pmu.Lock()
	b.pending = append(b.pending, o)
	b.pmu.Unlock()
	b.store.notify()
	if w.closed.Load() { // Close began meanwhile, and may have flushed before o came
		b.mu.Lock()
		b.drain()
		b.write(true)
		b.mu.Unlock()
	}
}

// mergeNow merges o on the caller's path, after what waited before it;
// the writer writes the file, or, once the store is closed, the caller.
func (b *Book) mergeNow(o observation) {
	b.mu.Lock()
	b.drain()
	b.merge(o)
	closed := b.store.w.closed.Load()
	if closed {
		b.write(true)
	}
	b.mu.Unlock()
	if !closed {
		b.store.notify()
	}
}

// drain merges the observations that wait, in order. b.mu is held.
func (b *Book) drain() {
	b.pmu.Lock()
	waiting := b.pending
	b.pending = nil
	b.pmu.Unlock()
	for _, o := range waiting {
		b.merge(o)
		b.store.w.pending.Add(-int64(len(o.raw)))
	}
}

// merge merges one observation, and marks its server's file as behind:
// due when the shape moved, or at 1, 2, 4, 8... results (the counts in
// between are written at Close). b.mu is held.
func (b *Book) merge(ob observation) {
	var n *Node
	if !ob.isError {
		var ok bool
		if n, ok = Observe(ob.raw, ob.mask); !ok {
			return
		}
	}
	f := b.load(ob.server)
	def := b.def(ob.tool)
	o := f.Tools[ob.tool.Name]
	if o == nil || o.Def != def {
		if o == nil && len(f.Tools) >= MaxTools {
			return
		}
		o = &Observed{Def: def}
		f.Tools[ob.tool.Name] = o
	}
	changed := false
	if ob.isError {
		o.Errors++
	} else {
		o.Calls++
		o.Shape, changed = mergeChanged(o.Shape, n)
		if changed {
			o.text = ""
		}
	}
	b.dirty[ob.server] = b.dirty[ob.server] || changed || bits.OnesCount(uint(o.Calls+o.Errors)) == 1
}

// write writes the files that are due, or, with all, every file behind
// what the book holds. b.mu is held.
func (b *Book) write(all bool) {
	for server, due := range b.dirty {
		if due || all {
			b.save(server, b.servers[server])
			delete(b.dirty, server)
		}
	}
}

// Seen is a tool's observed shape as it is shown.
type Seen struct {
	Calls  int    // results merged into the shape
	Errors int    // results with isError
	Text   string // the shape (Node.Render)
	Line   string // the shape on one line (Node.Line)
}

// Shape is what the book holds of tool; ok is false when it holds no
// shape of the tool as now defined.
func (b *Book) Shape(server string, tool *mcp.Tool) (seen Seen, ok bool) {
	if tool == nil || tool.OutputSchema != nil {
		return Seen{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.drain() // what was observed before is shown
	o := b.load(server).Tools[tool.Name]
	if o == nil || o.Shape == nil || o.Def != b.def(tool) {
		return Seen{}, false
	}
	return Seen{Calls: o.Calls, Errors: o.Errors, Text: o.rendered(), Line: o.Shape.Line()}, true
}

// def is the hash of a tool's definition, cached for the listed tool.
func (b *Book) def(t *mcp.Tool) string {
	if d, ok := b.defs[t]; ok {
		return d
	}
	if len(b.defs) >= 4*MaxTools { // lists changed often: start again
		clear(b.defs)
	}
	d := Definition(t)
	b.defs[t] = d
	return d
}

// Definition is a hash of what defines a tool as listed: its name,
// description, inputSchema and outputSchema.
func Definition(t *mcp.Tool) string {
	data, _ := json.Marshal([]any{t.Name, t.Description, t.InputSchema, t.OutputSchema})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// path is the file of a server's shapes: named by a hash of the name,
// which is data the configuration chose, never part of a path.
func (b *Book) path(server string) string {
	sum := sha256.Sum256([]byte(server))
	return b.dir.Path(statedir.Shapes, hex.EncodeToString(sum[:16])+".json")
}

// load is the server's shapes, read from its file on first use.
func (b *Book) load(server string) *file {
	if f, ok := b.servers[server]; ok {
		return f
	}
	f := &file{Server: server, Tools: map[string]*Observed{}}
	b.servers[server] = f
	if b.dir == "" {
		return f
	}
	if err := readFile(b.path(server), server, f); err != nil {
		b.log.Warn("the observed shapes of a server could not be read; they are observed anew", "server", server, "err", err)
	}
	return f
}

// readFile reads a shapes file into f; a missing file is no error.
func readFile(path, server string, f *file) error {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Size() > maxFile {
		return fmt.Errorf("%s is %d bytes, more than %d", path, st.Size(), maxFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var got file
	if err := json.Unmarshal(data, &got); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if got.Server != server { // a hash collision, or a file copied in
		return fmt.Errorf("%s holds the shapes of another server", path)
	}
	for name, o := range got.Tools {
		if o != nil && len(f.Tools) < MaxTools {
			f.Tools[name] = o
		}
	}
	return nil
}

// save writes the server's shapes atomically (a new file renamed over
// the old one).
func (b *Book) save(server string, f *file) {
	if b.dir == "" {
		return
	}
	if err := writeFile(b.dir, b.path(server), f); err != nil {
		b.log.Warn("the observed shapes of a server could not be kept", "server", server, "err", err)
	}
}

func writeFile(dir statedir.Dir, path string, f *file) error {
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if len(data) > maxFile {
		return fmt.Errorf("the shapes would take %d bytes, more than the %d a file may hold; the file keeps the shapes it had", len(data), maxFile)
	}
	if _, err := dir.Ensure(statedir.Shapes); err != nil {
		return err
	}
	if err := statedir.WriteFile(path, data); err != nil {
		return fmt.Errorf("keeping %s: %w", filepath.Base(path), err)
	}
	return nil
}
