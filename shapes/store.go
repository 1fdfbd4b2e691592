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

// Store is the shapes of every principal in one state directory. An empty
// directory keeps them in memory only.
type Store struct {
	root statedir.Dir
	log  *slog.Logger

	mu    sync.Mutex
	books map[string]*Book // by principal key
}

// Open returns the store of d; nothing is read or written until a shape
// is asked for or observed. log receives what could not be kept.
func Open(d statedir.Dir, log *slog.Logger) *Store {
	if log == nil {
		log = slog.Default()
	}
	return &Store{root: d, log: log, books: map[string]*Book{}}
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
		b = &Book{dir: dir, log: s.log, servers: map[string]*file{}, defs: map[*mcp.Tool]string{}}
		s.books[key] = b
	}
	return b
}

// Book is the shapes of one place: per server and tool, read from its
// files on first use and written back when they change.
type Book struct {
	dir statedir.Dir
	log *slog.Logger

	mu      sync.Mutex
	servers map[string]*file
	defs    map[*mcp.Tool]string // definition hashes of listed tools
}

// Observe merges the shape of one result (a CallToolResult as JSON, as
// the sandbox gets it) of tool into what the book holds of it: anew when
// the tool's definition changed. A tool that declares an outputSchema is
// not observed: its schema says what it returns.
func (b *Book) Observe(server string, tool *mcp.Tool, raw json.RawMessage, mask Mask) {
	if tool == nil || tool.OutputSchema != nil {
		return
	}
	if len(raw) > MaxResult {
		return
	}
	n, isError, ok := Observe(raw, mask)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.load(server)
	def := b.def(tool)
	o := f.Tools[tool.Name]
	if o == nil || o.Def != def {
		if o == nil && len(f.Tools) >= MaxTools {
			return
		}
		o = &Observed{Def: def}
		f.Tools[tool.Name] = o
	}
	changed := false
	if isError {
		o.Errors++
	} else {
		o.Calls++
		o.Shape, changed = mergeChanged(o.Shape, n)
		if changed {
			o.text = ""
		}
	}
	if changed || bits.OnesCount(uint(o.Calls+o.Errors)) == 1 { // the shape moved, or 1, 2, 4, 8... results
		b.save(server, f)
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
