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

// offerCache keeps what a server offers besides tools (its resources,
// resource templates and prompts) as search entries: names and
// descriptions only, never contents. They are listed once per session and
// again after the server says a list changed.
type offerCache struct {
	sup   *supervisor
	list  sessionList[Entry]
	saved *savedListing // where a list read is saved; nil: nowhere
}

// entries returns the server's offers, starting it when needed. A list
// that cannot be fetched is left out: the tools are still searched; a
// server that does not start offers nothing.
func (o *offerCache) entries(ctx context.Context) []Entry {
	var list []Entry
	_ = o.sup.run(ctx, nil, "listing resources and prompts", func(ctx context.Context, c *conn) error {
		cached, gen, ok := o.list.cached(c)
		if ok {
			list = cached
			return nil
		}
		list = listOffers(ctx, o.sup.spec.Name, c.cs)
		if o.list.put(c, gen, list) {
			o.saved.keepOffers(list)
		}
		return nil
	})
	return list
}

// changed forgets the offers (the server said a list changed).
func (o *offerCache) changed() { o.list.changed() }

// listOffers lists the resources, resource templates and prompts of
// session cs, of server, as far as the server declares them and answers.
func listOffers(ctx context.Context, server string, cs *mcp.ClientSession) []Entry {
	list := []Entry{}
	caps := &mcp.ServerCapabilities{}
	if r := cs.InitializeResult(); r != nil && r.Capabilities != nil {
		caps = r.Capabilities
	}
	if caps.Resources != nil {
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				break
			}
			list = append(list, offerEntry(server, KindResource, r.URI, r.Name, r.Title, r.Description))
		}
		for r, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				break
			}
			list = append(list, offerEntry(server, KindTemplate, r.URITemplate, r.Name, r.Title, r.Description))
		}
	}
	if caps.Prompts != nil {
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				break
			}
			list = append(list, offerEntry(server, KindPrompt, "", p.Name, p.Title, p.Description))
		}
	}
	return list
}

// offerEntry is one resource, template or prompt as a search entry; its
// name is matched like a tool's.
func offerEntry(server, kind, uri, name, title, description string) Entry {
	t := &mcp.Tool{Name: name, Title: title, Description: description}
	return Entry{Server: server, Tool: t, Kind: kind, URI: uri, words: newToolWords(server, t)}
}
