package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/internal/termtext"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

func (c *cli) serversCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "servers",
		Short: "List the configured upstream servers and where each is defined",
		Long: `List the configured upstream servers and where each is defined, without
starting them. Secret values (env and headers) are masked. Problems in the
configuration are warnings on stderr.`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	var s appSettings
	return c.settingsCommand(cmd, &s, slices.Concat([]string{"config"}, flagsOf[logFlags]()), commandLogLevel, func([]string) error {
		return c.servers(&s, asJSON)
	})
}

// servers lists the configured servers without starting them.
func (c *cli) servers(s *appSettings, asJSON bool) error {
	a := newApp(s, c.stderr, nil)
	a.logProblems()
	defer a.close()
	if asJSON {
		out := make([]serverListing, len(a.specs))
		for i, sp := range a.specs {
			out[i] = listServer(sp)
		}
		return printJSON(c.stdout, out)
	}
	if len(a.specs) == 0 {
		fmt.Fprintln(c.stdout, noServers)
		return nil
	}
	// The launch line comes last and whole: its arguments (a directory, a
	// flag) are often what the user looks for.
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tDEFINED IN\tDESCRIPTION\tLAUNCH")
	for _, sp := range a.specs {
		launch := maskURL(sp.URL)
		if launch == "" {
			launch = strings.TrimSpace(sp.Command + " " + strings.Join(sp.Args, " "))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", termtext.Line(sp.Name), termtext.Line(sp.Source), termtext.Line(clip(sp.Description, 60)), termtext.Line(launch))
	}
	w.Flush()
	return nil
}

// noServers is what servers and tools say when nothing is configured.
const noServers = "no servers configured: add mcpServers files to ~/MCPs/ (see `codebridge import`)"

// serverListing is one server in `servers --json`: the configuration with
// secret values masked.
type serverListing struct {
	Name           string            `json:"name"`
	Command        string            `json:"command,omitempty"`
	Args           []string          `json:"args,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	Cwd            string            `json:"cwd,omitempty"`
	URL            string            `json:"url,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	Description    string            `json:"description,omitempty"`
	TimeoutSeconds float64           `json:"timeout_seconds,omitempty"`
	Source         string            `json:"source"`
}

// masked stands for a secret value in listings.
const masked = "***"

func listServer(sp discovery.Server) serverListing {
	mask := func(m map[string]string) map[string]string {
		if len(m) == 0 {
			return nil
		}
		out := make(map[string]string, len(m))
		for k := range m {
			out[k] = masked
		}
		return out
	}
	return serverListing{
		Name: sp.Name, Command: sp.Command, Args: sp.Args, Env: mask(sp.Env), Cwd: sp.Cwd,
		URL: maskURL(sp.URL), Headers: mask(sp.Headers), Description: sp.Description,
		TimeoutSeconds: sp.Timeout.Seconds(), Source: sp.Source,
	}
}

// maskURL hides a URL's password and query values, where tokens travel.
func maskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), masked)
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{masked}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func (c *cli) toolsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tools [SERVER]",
		Short: "List the tools of one server, or of all of them",
		Long: `List the tools of one server, or of all of them (this starts the servers).
The exit code is 1 when a server is unknown or does not start.`,
		Args: cobra.MaximumNArgs(1),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (with schemas)")
	var s appSettings
	return c.settingsCommand(cmd, &s, slices.Concat(flagsOf[upstreamFlags](), flagsOf[logFlags]()), commandLogLevel, func(args []string) error {
		return c.tools(&s, args, asJSON)
	})
}

// tools starts servers and lists their tools.
func (c *cli) tools(s *appSettings, rest []string, asJSON bool) error {
	a := newApp(s, c.stderr, nil)
	a.logProblems()
	defer a.close()
	servers := a.pool.Servers()
	if len(rest) > 0 {
		one, err := a.pool.Get(rest[0])
		if err != nil {
			fmt.Fprintln(c.stderr, "codebridge tools:", err)
			return errReported
		}
		servers = []*upstream.Server{one}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type listing struct {
		Server string      `json:"server"`
		Tools  []*mcp.Tool `json:"tools,omitempty"`
		Error  string      `json:"error,omitempty"`
	}
	out := make([]listing, len(servers))
	done := make(chan int)
	for i, sv := range servers {
		go func() {
			out[i].Server = sv.Name()
			tools, err := sv.Tools(ctx)
			out[i].Tools = tools
			if err != nil {
				out[i].Error = err.Error()
			}
			done <- i
		}()
	}
	for range servers {
		<-done
	}
	if asJSON {
		return printJSON(c.stdout, out)
	}
	if len(out) == 0 {
		fmt.Fprintln(c.stdout, noServers)
		return nil
	}
	failed := 0
	for _, l := range out {
		if l.Error != "" {
			failed++
			fmt.Fprintf(c.stdout, "%s: unavailable: %s\n\n", termtext.Line(l.Server), termtext.Line(l.Error))
			continue
		}
		fmt.Fprintf(c.stdout, "%s (%d tools)\n", termtext.Line(l.Server), len(l.Tools))
		for _, t := range l.Tools {
			fmt.Fprintf(c.stdout, "  %-28s %s\n", termtext.Line(t.Name), termtext.Line(clip(firstLine(t.Description), 90)))
		}
		fmt.Fprintln(c.stdout)
	}
	if failed > 0 {
		return errReported
	}
	return nil
}

func (c *cli) searchCommand() *cobra.Command {
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Ranked search over the tools of every server (what runtime.search_tool_docs does)",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{"give a QUERY, e.g. codebridge search read file"}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVarP(&limit, "limit", "n", 10, "how many results")
	var s appSettings
	return c.settingsCommand(cmd, &s, slices.Concat(flagsOf[upstreamFlags](), flagsOf[logFlags]()), commandLogLevel, func(args []string) error {
		return c.search(&s, args, asJSON, limit)
	})
}

// search ranks the tools of every server for a query.
func (c *cli) search(s *appSettings, rest []string, asJSON bool, limit int) error {
	a := newApp(s, c.stderr, nil)
	a.logProblems()
	defer a.close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := a.bridge.Search(ctx, strings.Join(rest, " "), limit)
	if res.Cut != "" {
		fmt.Fprintln(c.stderr, termtext.Line(res.Cut))
	}
	hits := res.Hits
	if asJSON {
		return printJSON(c.stdout, append([]protocol.SearchHit{}, hits...))
	}
	for _, h := range hits {
		name := termtext.Line(h.Server) + "." + termtext.Line(h.Tool)
		if h.Skill {
			name = "skills." + termtext.Line(h.Tool)
		}
		fmt.Fprintf(c.stdout, "%5.2f  %s  %s\n", h.Score, name, termtext.Line(clip(firstLine(h.Description), 80)))
	}
	if len(hits) == 0 {
		fmt.Fprintln(c.stdout, "no tool matches")
	}
	for _, d := range res.Down {
		fmt.Fprintf(c.stderr, "not searched: %s: %s\n", termtext.Line(d.Server), termtext.Line(d.Err.Error()))
	}
	for _, s := range res.Stale {
		fmt.Fprintf(c.stderr, "searched from a listing made before its entry changed: %s (listed %s)\n", termtext.Line(s.Server), s.Saved.Local().Format(time.DateTime))
	}
	return nil
}

// printJSON prints v as indented JSON, with what a terminal would act on
// escaped (termtext.JSON): the values may be a sandbox's or an
// upstream's text.
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return errReported
	}
	if _, err := w.Write(append(termtext.JSON(b), '\n')); err != nil {
		return errReported
	}
	return nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
