package upstream

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Catalogue collects the tools of every server, then its resources,
// templates and prompts, starting servers in
// parallel as needed. A server that does not answer within wait is
// reported as unavailable; the others are still returned.
func (p *Pool) Catalogue(ctx context.Context, wait time.Duration) ([]Entry, []Unavailable) {
	type part struct {
		tools  []*mcp.Tool
		words  []*toolWords
		offers []Entry
		err    error
	}
	parts := make([]part, len(p.servers))
	var wg sync.WaitGroup
	for i, s := range p.servers {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			parts[i].tools, parts[i].err = s.catalogue.tools(sctx)
			if parts[i].err == nil {
				parts[i].words = s.words.of(s.Name(), parts[i].tools)
				parts[i].offers = s.offers.entries(sctx)
			}
		})
	}
	wg.Wait()
	var entries []Entry
	var down []Unavailable
	for i, s := range p.servers {
		if parts[i].err != nil {
			down = append(down, Unavailable{Server: s.Name(), Err: parts[i].err})
			continue
		}
		for j, t := range parts[i].tools {
			entries = append(entries, Entry{Server: s.Name(), Tool: t, words: parts[i].words[j]})
		}
		entries = append(entries, parts[i].offers...)
	}
	return entries, down
}
