package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/codebridge/codebridge/discovery"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server is one configured upstream MCP server, started on demand. It
// composes the parts that each do one job: the supervisor keeps its
// session, the tool catalogue its tools, the word index their search
// words, the offers cache its resources and prompts for search, the saved
// listing keeps both in the state directory for the next bridge, the
// relister lists them in the background, the call watchers tie its
// notifications to the calls in flight, and the downlink answers what it
// asks of its client.
type Server struct {
	spec discovery.Server
	opts Options
	log  *slog.Logger

	sup       *supervisor
	catalogue toolCatalogue
	words     wordIndex
	offers    offerCache
	saved     *savedListing
	relist    *relister
	watchers  callWatchers
	downlink  downlink
}

// newServer returns the server of spec; opts.Downstream answers the
// server's requests to its client.
func newServer(spec discovery.Server, opts Options) *Server {
	if spec.Timeout > 0 {
		opts.CallTimeout = spec.Timeout // the server's own limit wins
	}
	log := opts.Log.With("server", spec.Name)
	s := &Server{spec: spec, opts: opts, log: log}
	s.words.description = spec.Description
	s.sup = &supervisor{
		spec:           spec,
		connectTimeout: opts.ConnectTimeout,
		callTimeout:    opts.CallTimeout,
		maxMessage:     opts.MaxMessage,
		log:            log,
		stderr:         newTailBuffer(8 << 10),
		newClient:      s.newClient,
		restarted:      s.catalogue.changed,
		calls:          &s.watchers,
	}
	s.catalogue.sup = s.sup
	s.offers.sup = s.sup
	s.saved = newSavedListing(opts.Catalogue, opts.place, spec)
	s.catalogue.saved, s.offers.saved = s.saved, s.saved
	s.relist = newRelister(opts.slots, s.listAll)
	s.watchers = callWatchers{server: spec.Name, log: log, down: opts.Downstream}
	s.downlink = downlink{server: spec.Name, sampling: spec.Sampling, source: spec.Source, log: log, down: opts.Downstream}
	return s
}

// Name is the server's name as configured.
func (s *Server) Name() string { return s.spec.Name }

// Description is the description from the config, or "".
func (s *Server) Description() string { return s.spec.Description }

// Cwd is the directory the server's entry runs it in; empty when unset.
func (s *Server) Cwd() string { return s.spec.Cwd }

// Running reports whether the server has a live session now.
func (s *Server) Running() bool { return s.sup.running() }

// Start starts the server if it is not running and waits until it is
// ready or ctx ends.
func (s *Server) Start(ctx context.Context) error {
	_, err := s.sup.session(ctx)
	return err
}

// Stop ends the server's session and its whole process group, and its
// background listing. A stopped server does not start again.
func (s *Server) Stop() {
	s.sup.stop()
	s.relist.close()
}

// ToolsGeneration counts the changes to the server's tool list so far (it
// said its tools changed, or it restarted): whoever cached the tools
// fetches them again when the count moved.
func (s *Server) ToolsGeneration() uint64 { return s.catalogue.generation() }

// Tools returns the server's tools, starting it when needed. The list is
// cached until the server reports a change or restarts.
func (s *Server) Tools(ctx context.Context) ([]*mcp.Tool, error) { return s.catalogue.tools(ctx, nil) }

// Listed returns the server's tools as it last listed them: the live
// list while it runs; while it does not, the listing the state directory
// keeps (see [CatalogueStore]) when that was made under the server's
// entry as it is now, without starting it; otherwise the list it gives
// when started. When the server, started later, lists other tools than
// those given from the saved listing, its [Server.ToolsGeneration]
// moves, so that whoever holds them lists again. A listing that fails is
// caller's to hear of.
func (s *Server) Listed(ctx context.Context, caller Caller) ([]*mcp.Tool, error) {
	// A per_session server's listing is one session's: another session of
	// the same principal has a server of its own, which may list otherwise.
	if !s.sup.running() && !s.spec.PerSession {
		if tools, ok := s.saved.lend(); ok {
			return tools, nil
		}
	}
	return s.catalogue.tools(ctx, caller)
}

// listAll lists the server's tools, then its resources, templates and
// prompts, starting it when needed (the relister's listing).
func (s *Server) listAll(ctx context.Context) ([]*mcp.Tool, []Entry, error) {
	tools, err := s.catalogue.tools(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	return tools, s.offers.entries(ctx), nil
}

// Tool returns the tool the server lists under exactly name (case and
// punctuation included), or nil when it lists none. A name missing from
// the cached list is looked for again in a fresh one, so that a tool
// added a moment ago (before its list_changed notification arrived) is
// found. A listing that fails is caller's to hear of.
func (s *Server) Tool(ctx context.Context, caller Caller, name string) (*mcp.Tool, error) {
	return s.catalogue.lookup(ctx, caller, name)
}

// Call calls tool with arguments (a JSON object, or empty for none) for
// caller, and returns the CallToolResult as JSON. The server's progress
// notifications and log messages about the call go to caller (nil: to no
// one). A stdio server gets the arguments as they came, not encoded
// again (see [oneLine]), and its result is passed through as it sent it,
// neither decoded nor encoded again; a remote server's is encoded from
// the go-sdk's decoding. A result with isError set is a result, not an
// error: errors are for calls that did not complete.
func (s *Server) Call(ctx context.Context, caller Caller, tool string, arguments json.RawMessage) (json.RawMessage, error) {
	arguments, aerr := oneLine(arguments)
	if aerr != nil {
		return nil, fmt.Errorf("server %q: the arguments of tool %q: %w", s.spec.Name, tool, aerr)
	}
	var raw json.RawMessage
	err := s.sup.run(ctx, caller, "calling tool "+strconv.Quote(tool), func(cctx context.Context, c *conn) error {
		call, forget := s.watchers.watch(caller)
		defer forget()
		var err error
		if c.line != nil { // stdio, legacy protocol: the bridge sends it itself
			raw, err = c.line.request(cctx, "tools/call", toolCallParams(call.token, tool, arguments), call.slot)
			call.handled(cctx) // the log messages that came before the answer
			return err
		}
		// The go-sdk sends it; a stdio connection finds the call by its
		// progress token and leaves the raw result in its slot.
		defer call.slot.release()
		params := &mcp.CallToolParams{Name: tool, Arguments: arguments}
		params.SetProgressToken(call.token)
		res, err := c.cs.CallTool(cctx, params)
		if err != nil || call.slot.raw != nil {
			raw = call.slot.raw
			return err
		}
		raw, err = json.Marshal(res)
		return err
	})
	if err != nil {
		return nil, err
	}
	return raw, nil
}

// oneLine is a call's arguments as they are sent on: "{}" for none, and
// otherwise the JSON as it came, which the bridge decoded (so validated)
// already. It is checked once more here, since it goes into a line of
// the upstream's protocol as it is: text that is not one JSON value could
// close the request's object and add members of its own (a second "name"
// that a server reading the last one would run), and a line break between
// its tokens would end the line, the rest read as a request of its own.
// Such breaks are taken out ([json.Compact]); what is not JSON is refused.
func oneLine(arguments json.RawMessage) (json.RawMessage, error) {
	if len(arguments) == 0 || string(arguments) == "null" {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(arguments) {
		return nil, errors.New("they are not one JSON value")
	}
	if bytes.IndexByte(arguments, '\n') < 0 && bytes.IndexByte(arguments, '\r') < 0 {
		return arguments, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, arguments); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// toolCallParams are the params of a tools/call request of tool, under
// its progress token, with arguments (from [oneLine]) as they are: what
// json.Marshal makes of the [mcp.CallToolParams] the go-sdk sends, member
// for member, without encoding the arguments again.
func toolCallParams(token, tool string, arguments json.RawMessage) []byte {
	p := make([]byte, 0, len(arguments)+len(token)+len(tool)+48)
	p = append(p, `{"_meta":{"progressToken":`...)
	p, _ = jsontext.AppendQuote(p, token)
	p = append(p, `},"name":`...)
	p, _ = jsontext.AppendQuote(p, tool)
	p = append(p, `,"arguments":`...)
	return append(append(p, arguments...), '}')
}
