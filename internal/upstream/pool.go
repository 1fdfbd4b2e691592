package upstream

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/codebridge/codebridge/discovery"
)

// Options configure a [Pool].
type Options struct {
	// ConnectTimeout bounds starting a server and its MCP handshake. Zero
	// means 60 seconds (npx may have to fetch a package).
	ConnectTimeout time.Duration
	// CallTimeout bounds one tool call. Zero means 120 seconds.
	CallTimeout time.Duration
	// MaxMessage bounds one message from a stdio server, in bytes. Zero
	// means 256 MiB.
	MaxMessage int
	// Version is reported to upstream servers as the client version.
	Version string
	// Log receives diagnostics. Nil means slog.Default().
	Log *slog.Logger
	// Downstream answers what the servers ask of their client (sampling,
	// elicitation, roots) and hears their log messages. It is made before
	// the pool (bridge.NewClients); nil refuses such requests with
	// [ErrNoClient].
	Downstream Downstream
	// Catalogue keeps what the servers list in the state directory, for
	// the searches of the next bridge (see [Pool.Catalogue]); nil keeps
	// nothing.
	Catalogue *CatalogueStore

	place string        // the principal whose place keeps the listings of per_session servers ([Pool.ForSession])
	slots chan struct{} // the background listings in progress (relister), shared by a pool and its views
}

// DefaultCallTimeout bounds one upstream call when nothing else does.
const DefaultCallTimeout = 120 * time.Second

// Pool holds the configured upstream servers. It is safe for concurrent use.
type Pool struct {
	servers []*Server
	byName  map[string]*Server
	opts    Options
	owned   []*Server // the servers Close stops
}

// NewPool returns a pool for specs, in their order. No server starts until
// it is used; the listings [Options.Catalogue] keeps of them are read in
// the background (see readSaved).
func NewPool(specs []discovery.Server, opts Options) *Pool {
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = 60 * time.Second
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.MaxMessage == 0 {
		opts.MaxMessage = 256 << 20
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	opts.slots = make(chan struct{}, maxRelisting)
	p := &Pool{byName: make(map[string]*Server, len(specs)), opts: opts}
	for _, spec := range specs {
		if _, dup := p.byName[spec.Name]; dup {
			continue // discovery already reported it
		}
		s := newServer(spec, opts)
		p.servers = append(p.servers, s)
		p.owned = append(p.owned, s)
		p.byName[spec.Name] = s
	}
	go readSaved(p.servers)
	return p
}

// Servers returns the configured servers in config order.
func (p *Pool) Servers() []*Server { return p.servers }

// Get returns the server called name, or an error that lists the names
// that exist.
func (p *Pool) Get(name string) (*Server, error) {
	if s, ok := p.byName[name]; ok {
		return s, nil
	}
	names := make([]string, 0, len(p.servers))
	for _, s := range p.servers {
		names = append(names, s.Name())
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, mark(fmt.Errorf("no MCP server %q is configured, and none is: add servers to ~/MCPs/*.json", name), ErrUnknownServer)
	}
	return nil, mark(fmt.Errorf("no MCP server %q is configured; configured servers: %s", name, strings.Join(names, ", ")), ErrUnknownServer)
}

// Start starts the named servers in parallel and waits for them. The
// error at i is names[i]'s: an unknown name, or why it did not start.
func (p *Pool) Start(ctx context.Context, names []string) []error {
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			s, err := p.Get(name)
			if err == nil {
				err = s.Start(ctx)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return errs
}

// Close stops every running server, in parallel, and waits for them.
func (p *Pool) Close() error {
	var wg sync.WaitGroup
	for _, s := range p.owned {
		wg.Go(func() {
			s.Stop()
		})
	}
	wg.Wait()
	return nil
}

// ForSession returns the pool one MCP session sees when several share the
// bridge: the same servers, in the same order, where those configured
// with "per_session" are clients of the session's own (a process, or a
// connection, per session), started on first use. Its Close stops only
// those; the shared servers stay with p.
//
// What a per_session server asks of its client, and what it logs, goes to
// d, the session's own downstream, and never to another session's; nil
// means p's. What a per_session server lists is kept in the place of the
// session's principal, whose key (principal.Principal.Key) is place: its
// listing can differ from one principal to another.
func (p *Pool) ForSession(d Downstream, place string) *Pool {
	v := &Pool{byName: make(map[string]*Server, len(p.servers)), opts: p.opts}
	if d != nil {
		v.opts.Downstream = d
	}
	v.opts.place = place
	for _, s := range p.servers {
		if s.spec.PerSession {
			s = newServer(s.spec, v.opts)
			v.owned = append(v.owned, s)
		}
		v.servers = append(v.servers, s)
		v.byName[s.Name()] = s
	}
	go readSaved(v.owned)
	return v
}

// ctxWithTimeout is context.WithTimeout that keeps an earlier deadline.
func ctxWithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
