package upstream

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kinds of search entries besides tools (a tool's Kind is "").
const (
	KindResource = "resource"
	KindTemplate = "template"
	KindPrompt   = "prompt"
)

// offers returns the server's resources, resource templates and prompts
// as search entries (names and descriptions only, never contents), listed
// once per session and again after the server says a list changed. A list
// that cannot be fetched is left out: the tools are still searched.
func (s *Server) offers(ctx context.Context) []Entry {
	c, err := s.session(ctx)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	if s.offerConn == c && s.offerList != nil {
		list := s.offerList
		s.mu.Unlock()
		return list
	}
	gen := s.offerGen
	s.mu.Unlock()

	lctx, cancel := ctxWithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	list := []Entry{}
	caps := &mcp.ServerCapabilities{}
	if r := c.cs.InitializeResult(); r != nil && r.Capabilities != nil {
		caps = r.Capabilities
	}
	if caps.Resources != nil {
		for r, err := range c.cs.Resources(lctx, nil) {
			if err != nil {
				break
			}
			list = append(list, s.entry(KindResource, r.URI, r.Name, r.Title, r.Description))
		}
		for r, err := range c.cs.ResourceTemplates(lctx, nil) {
			if err != nil {
				break
			}
			list = append(list, s.entry(KindTemplate, r.URITemplate, r.Name, r.Title, r.Description))
		}
	}
	if caps.Prompts != nil {
		for p, err := range c.cs.Prompts(lctx, nil) {
			if err != nil {
				break
			}
			list = append(list, s.entry(KindPrompt, "", p.Name, p.Title, p.Description))
		}
	}
	s.mu.Lock()
	if s.conn == c && s.offerGen == gen {
		s.offerConn, s.offerList = c, list
	}
	s.mu.Unlock()
	return list
}

// entry is one resource, template or prompt as a search entry; its name
// is matched like a tool's.
func (s *Server) entry(kind, uri, name, title, description string) Entry {
	t := &mcp.Tool{Name: name, Title: title, Description: description}
	return Entry{Server: s.spec.Name, Tool: t, Kind: kind, URI: uri, words: newToolWords(s.spec.Name, t)}
}

// dropOffers forgets the listed resources and prompts (they changed).
func (s *Server) dropOffers() {
	s.mu.Lock()
	s.offerList = nil
	s.offerGen++
	s.mu.Unlock()
}
