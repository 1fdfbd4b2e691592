package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/internal/statedir"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of a saved listing, and its age.
const (
	// maxSavedEntries is how many tools, and how many resources,
	// templates and prompts, one server's saved listing holds: the
	// listing of a server that lists more is not kept (it is searched
	// live only), and a file that holds more is not read.
	maxSavedEntries = 2048
	// maxSavedFile is the largest listing file written or read back.
	maxSavedFile = 8 << 20
	// savedMaxAge is how long a listing made under the server's current
	// entry is searched without listing the server again: an older one is
	// still searched, and the search lists the server again in the
	// background (a package that npx or uvx fetches can change its tools
	// without any change to the entry).
	savedMaxAge = 24 * time.Hour
	// savedVersion is the format of a listing file; a file of another
	// format is ignored.
	savedVersion = 1
)

// CatalogueStore keeps what each upstream server listed (its tools, and
// its resources, templates and prompts as search entries) in the state
// directory, one file per server under statedir.Catalogue, so that the
// first search of a new bridge answers without starting any server. A
// listing is kept with a digest of the entry it was made under (see
// entryDigest): a server whose entry changed since is searched from its
// old listing only until it is listed again, and marked stale meanwhile.
// The listings of a per_session server are kept in the place of the
// principal whose session listed it. A nil store keeps nothing.
type CatalogueStore struct {
	root statedir.Dir // "": listings are kept in memory only
	log  *slog.Logger
	now  func() time.Time
}

// OpenCatalogue returns the store of d; nothing is read or written until
// a server is searched or listed. log receives what could not be kept.
func OpenCatalogue(d statedir.Dir, log *slog.Logger) *CatalogueStore {
	if log == nil {
		log = slog.Default()
	}
	return &CatalogueStore{root: d, log: log, now: time.Now}
}

// savedFile is one server's listing as its file holds it. Tools and
// Offers are each nil when they were not listed under Entry.
type savedFile struct {
	V      int          `json:"v"`
	Server string       `json:"server"`
	Entry  string       `json:"entry"`
	Saved  time.Time    `json:"saved"`
	Tools  []*mcp.Tool  `json:"tools"`
	Offers []savedOffer `json:"offers"`
}

// savedOffer is a resource, resource template or prompt as its search
// entry keeps it: names and descriptions, never contents.
type savedOffer struct {
	Kind        string `json:"kind"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	URI         string `json:"uri,omitempty"`
}

// path is the file of server's listing in the place of principal key
// place: named by a hash of the name, which is data the configuration
// chose, never part of a path. "" when nothing is kept on disk.
func (c *CatalogueStore) path(place, server string) string {
	if c.root == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(server))
	return c.root.Of(place).Path(statedir.Catalogue, hex.EncodeToString(sum[:16])+".json")
}

// read returns the listing kept for server in place, or nil when there
// is none. A file that is too large, does not parse, is of another format
// or names another server is an error, and is not used.
func (c *CatalogueStore) read(place, server string) (*savedFile, error) {
	path := c.path(place, server)
	if path == "" {
		return nil, nil
	}
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if st.Size() > maxSavedFile {
		return nil, fmt.Errorf("%s is %d bytes, more than %d", path, st.Size(), maxSavedFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f savedFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := f.check(server); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}

// check says why f is not a listing of server this bridge can use.
func (f *savedFile) check(server string) error {
	switch {
	case f.V != savedVersion:
		return fmt.Errorf("format %d, not %d", f.V, savedVersion)
	case f.Server != server: // a hash collision, or a file copied in
		return errors.New("it holds the listing of another server")
	case len(f.Tools) > maxSavedEntries || len(f.Offers) > maxSavedEntries:
		return fmt.Errorf("it holds more than %d entries", maxSavedEntries)
	}
	for _, t := range f.Tools {
		if t == nil || t.Name == "" {
			return errors.New("it holds a tool without a name")
		}
	}
	for _, o := range f.Offers {
		if o.Kind != KindResource && o.Kind != KindTemplate && o.Kind != KindPrompt {
			return fmt.Errorf("it holds an entry of kind %q", o.Kind)
		}
	}
	return nil
}

// write replaces the file of f's server in place with f, at once.
func (c *CatalogueStore) write(place string, f *savedFile) error {
	path := c.path(place, f.Server)
	if path == "" {
		return nil
	}
	if len(f.Tools) > maxSavedEntries || len(f.Offers) > maxSavedEntries {
		return fmt.Errorf("the server lists more than %d entries; its listing is not kept, and every bridge lists it anew", maxSavedEntries)
	}
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if len(data) > maxSavedFile {
		return fmt.Errorf("its listing would take %d bytes, more than the %d a file may hold; it is not kept, and every bridge lists it anew", len(data), maxSavedFile)
	}
	if _, err := c.root.Of(place).Ensure(statedir.Catalogue); err != nil {
		return err
	}
	return statedir.WriteFile(path, data)
}

// entryDigest is a digest of what defines a server's listing in its
// entry: its name, how it is started (command, arguments, environment,
// directory) or reached (URL, headers), and whether it runs per session.
// The values of env and headers enter only as their own digests: they
// are often secrets, and a listing file holds only the final digest. The
// description, timeout and policy do not change what a server lists.
func entryDigest(spec discovery.Server) string {
	data, _ := json.Marshal(struct {
		Name, Command, Cwd, URL string
		Args                    []string
		Env, Headers            map[string]string
		PerSession              bool
	}{spec.Name, spec.Command, spec.Cwd, spec.URL, spec.Args, valueDigests(spec.Env), valueDigests(spec.Headers), spec.PerSession})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// valueDigests is m with each value replaced by its digest.
func valueDigests(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		sum := sha256.Sum256([]byte(v))
		out[k] = hex.EncodeToString(sum[:])
	}
	return out
}

// savedState is how a server's saved listing stands to its entry now.
type savedState int

const (
	savedNone    savedState = iota // never listed (or its file is unusable)
	savedStale                     // listed under another entry
	savedOld                       // listed under this entry, but long ago, or without its offers
	savedCurrent                   // listed under this entry lately, offers too
)

// savedView is what a search reads of a server's saved listing.
type savedView struct {
	state  savedState
	tools  []*mcp.Tool
	offers []Entry
	saved  time.Time
}

// savedListing is one server's part of the store: its listing as the
// state directory keeps it, read on first need and written again each
// time the server lists its tools or offers.
type savedListing struct {
	store  *CatalogueStore // nil: nothing is kept
	place  string          // the key of the principal whose place keeps it ("": the state directory's root)
	server string
	entry  string // entryDigest of the server's entry now

	mu     sync.Mutex
	loaded bool
	file   *savedFile // nil: none
	offers []Entry    // file.Offers as search entries
	lent   bool       // file.Tools were given out in place of a live list (Server.Listed)
}

// newSavedListing is the saved listing of spec's server in place.
func newSavedListing(store *CatalogueStore, place string, spec discovery.Server) *savedListing {
	return &savedListing{store: store, place: place, server: spec.Name, entry: entryDigest(spec)}
}

// load reads the file on first need; l.mu is held.
func (l *savedListing) load() {
	if l.loaded || l.store == nil {
		return
	}
	l.loaded = true
	f, err := l.store.read(l.place, l.server)
	if err != nil {
		l.store.log.Warn("the saved listing of a server could not be read; it is listed anew", "server", l.server, "err", err)
		return
	}
	l.set(f)
}

// set makes f the listing held; l.mu is held.
func (l *savedListing) set(f *savedFile) {
	l.file, l.offers = f, nil
	if f == nil {
		return
	}
	for _, o := range f.Offers {
		l.offers = append(l.offers, offerEntry(l.server, o.Kind, o.URI, o.Name, o.Title, o.Description))
	}
}

// view is the saved listing and how it stands to the entry now.
func (l *savedListing) view() savedView {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.load()
	f := l.file
	switch {
	case f == nil || f.Tools == nil:
		return savedView{}
	case f.Entry != l.entry:
		return savedView{state: savedStale, tools: f.Tools, offers: l.offers, saved: f.Saved}
	case f.Offers == nil || l.store.now().Sub(f.Saved) > savedMaxAge:
		return savedView{state: savedOld, tools: f.Tools, offers: l.offers, saved: f.Saved}
	}
	return savedView{state: savedCurrent, tools: f.Tools, offers: l.offers, saved: f.Saved}
}

// lend returns the tools saved under the entry now, to give out in place
// of a live list; ok is false when there are none.
func (l *savedListing) lend() (tools []*mcp.Tool, ok bool) {
	v := l.view()
	if v.state != savedOld && v.state != savedCurrent {
		return nil, false
	}
	l.mu.Lock()
	l.lent = true
	l.mu.Unlock()
	return v.tools, true
}

// keepTools saves tools, just listed. It reports whether they differ from
// saved tools that were given out in their place (whoever holds those
// must list again).
func (l *savedListing) keepTools(tools []*mcp.Tool) (moved bool) {
	if l == nil || l.store == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.load()
	same := l.file != nil && sameTools(l.file.Tools, tools)
	moved = l.lent && l.file != nil && !same
	l.lent = false
	if same && l.recent() {
		return moved // nothing new to write
	}
	f := l.next()
	f.Tools = tools
	l.save(f)
	return moved
}

// keepOffers saves a server's resources, templates and prompts, just
// listed.
func (l *savedListing) keepOffers(offers []Entry) {
	if l == nil || l.store == nil {
		return
	}
	saved := make([]savedOffer, 0, len(offers))
	for _, e := range offers {
		saved = append(saved, savedOffer{Kind: e.Kind, Name: e.Tool.Name, Title: e.Tool.Title, Description: e.Tool.Description, URI: e.URI})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.load()
	if l.file != nil && l.file.Offers != nil && slices.Equal(l.file.Offers, saved) && l.recent() {
		return // nothing new to write
	}
	f := l.next()
	f.Offers = saved
	l.save(f)
}

// recent reports whether the listing held was saved under the entry now,
// and not long ago: a list read again that says the same is not written
// again (a sandbox that names tools no server lists makes the catalogue
// list them again, each time), until half of savedMaxAge passed; l.mu is
// held.
func (l *savedListing) recent() bool {
	return l.file != nil && l.file.Entry == l.entry && l.store.now().Sub(l.file.Saved) < savedMaxAge/2
}

// next is a new listing under the entry now, saved now, with what the
// one held was listed under the same entry; l.mu is held.
func (l *savedListing) next() *savedFile {
	f := &savedFile{V: savedVersion, Server: l.server, Entry: l.entry, Saved: l.store.now().UTC()}
	if l.file != nil && l.file.Entry == l.entry {
		f.Tools, f.Offers = l.file.Tools, l.file.Offers
	}
	return f
}

// save holds f and writes it; l.mu is held. What cannot be written is
// still held for this bridge.
func (l *savedListing) save(f *savedFile) {
	l.set(f)
	if err := l.store.write(l.place, f); err != nil {
		l.store.log.Warn("the listing of a server could not be kept in the state directory; a new bridge will start it to search it", "server", l.server, "err", err)
	}
}

// sameTools reports whether two tool lists say the same.
func sameTools(a, b []*mcp.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}
