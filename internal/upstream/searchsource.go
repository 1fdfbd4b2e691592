package upstream

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// refreshWait is how long a search waits for a server it starts to list
// again while it has an earlier listing of it to answer from (saved under
// an earlier form of the entry): the search answers from that listing
// after this long, however long the start takes.
const refreshWait = time.Second

// Stale names a server that a search read from a listing saved under an
// earlier form of its entry in the configuration (Saved is when): the
// server is being listed again, and what it offers now may differ.
type Stale struct {
	Server string
	Saved  time.Time
}

// Catalogue collects what every server offers a search: its tools, then
// its resources, templates and prompts.
//
// A running server whose lists are kept for its session gives those. A
// server that does not run is searched from the listing the state
// directory keeps ([Options.Catalogue]) when that was made under its
// entry as it is now, without starting it (a listing older than
// savedMaxAge, or without the server's resources and prompts, is searched
// too, and the server listed again in the background). Every other server (never listed, listed under an earlier
// form of its entry, or running with a list to fetch again) is listed in
// the background, at most maxRelisting at once, started when needed. The
// search waits up to refreshWait for those it starts and has an earlier
// listing of, and up to wait for the others: those it has none of (a
// search that left them out would be wrong) and those that run (they
// answer at once). A server not listed by then is searched from its
// earlier listing, named in the stale ones when that was made under
// another form of its entry, or reported unavailable when there is none;
// its listing goes on, and is kept for the next search. A server whose
// listing failed is reported unavailable.
func (p *Pool) Catalogue(ctx context.Context, wait time.Duration) ([]Entry, []Unavailable, []Stale) {
	looks := make([]look, len(p.servers))
	for i, s := range p.servers {
		looks[i] = s.look()
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	rctx, cancelRefresh := context.WithTimeout(wctx, refreshWait)
	defer cancelRefresh()
	var entries []Entry
	var down []Unavailable
	var stale []Stale
	for i, s := range p.servers {
		l := &looks[i]
		if l.patient {
			l.settle(wctx, s.Name())
		} else {
			l.settle(rctx, s.Name())
		}
		if l.err != nil {
			down = append(down, Unavailable{Server: s.Name(), Err: l.err})
			continue
		}
		if l.stale {
			stale = append(stale, Stale{Server: s.Name(), Saved: l.saved})
		}
		words := s.words.of(s.Name(), l.tools)
		for j, t := range l.tools {
			entries = append(entries, Entry{Server: s.Name(), Tool: t, words: words[j]})
		}
		entries = append(entries, l.offers...)
	}
	return entries, down, stale
}

// readSaved reads the saved listings of servers and computes their search
// words, so that the first search finds them ready: a bridge does it
// while its sandbox starts, before any search can come.
func readSaved(servers []*Server) {
	for _, s := range servers {
		if v := s.saved.view(); v.tools != nil {
			s.words.of(s.Name(), v.tools)
		}
	}
}

// look is what one search reads of a server.
type look struct {
	tools  []*mcp.Tool
	offers []Entry
	err    error     // the server could not be listed
	stale  bool      // tools and offers are a listing made under an earlier form of the entry
	saved  time.Time // when that listing was saved

	pending *listing  // the listing the search waits for; nil: none
	patient bool      // wait for pending as long as the search may, not refreshWait
	earlier savedView // what the search reads when pending is not done in time
}

// look is what a search reads of s now, and the listing it waits for,
// started here (see [Pool.Catalogue]).
func (s *Server) look() look {
	if tools, offers, ok := s.kept(); ok {
		return look{tools: tools, offers: offers}
	}
	v := s.saved.view()
	running := s.sup.running()
	if !running {
		switch v.state {
		case savedCurrent:
			return look{tools: v.tools, offers: v.offers}
		case savedOld:
			s.relist.start() // searched now; listed again for the next search
			return look{tools: v.tools, offers: v.offers}
		}
	}
	return look{pending: s.relist.start(), patient: running || v.state == savedNone, earlier: v}
}

// kept returns the lists kept for the server's live session, when it
// runs and both are.
func (s *Server) kept() ([]*mcp.Tool, []Entry, bool) {
	c := s.sup.live()
	if c == nil {
		return nil, nil, false
	}
	tools, _, ok := s.catalogue.list.cached(c)
	if !ok {
		return nil, nil, false
	}
	offers, _, ok := s.offers.list.cached(c)
	return tools, offers, ok
}

// settle waits for the look's listing until ctx ends, then reads it, or
// the earlier listing of server when it is not done.
func (l *look) settle(ctx context.Context, server string) {
	if l.pending == nil {
		return
	}
	select {
	case <-l.pending.done:
	case <-ctx.Done():
	}
	select {
	case <-l.pending.done: // done, even when ctx ended at the same time
		l.tools, l.offers, l.err = l.pending.tools, l.pending.offers, l.pending.err
		return
	default:
	}
	switch l.earlier.state {
	case savedNone:
		l.err = fmt.Errorf("server %q did not list its tools in time (it is still starting); search again in a few seconds to include it", server)
	case savedStale:
		l.tools, l.offers, l.stale, l.saved = l.earlier.tools, l.earlier.offers, true, l.earlier.saved
	default:
		l.tools, l.offers = l.earlier.tools, l.earlier.offers
	}
}
