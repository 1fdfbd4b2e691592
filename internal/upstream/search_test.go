package upstream

import (
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// catalogue is a made-up set of servers in the shape real ones have.
func catalogue() []Entry {
	tools := map[string][][2]string{
		"filesystem": {
			{"read_text_file", "Read the complete contents of a file from the file system as text."},
			{"read_multiple_files", "Read the contents of multiple files simultaneously."},
			{"write_file", "Create a new file or completely overwrite an existing file with new content."},
			{"list_directory", "Get a detailed listing of all files and directories in a specified path."},
			{"search_files", "Recursively search for files and directories matching a pattern."},
		},
		"google-calendar": {
			{"list_events", "List events from a calendar in a time range."},
			{"create_event", "Create a new calendar event."},
			{"list_calendars", "List the calendars the user can access."},
		},
		"memory": {
			{"create_entities", "Create multiple new entities in the knowledge graph."},
			{"delete_entities", "Delete multiple entities and their associated relations from the knowledge graph."},
			{"read_graph", "Read the entire knowledge graph."},
			{"open_nodes", "Open specific nodes in the knowledge graph by their names."},
		},
		"math": {
			{"add", "Add two numbers."},
			{"multiply", "Multiply two numbers."},
		},
		"github": {
			{"create_issue", "Create a new issue in a GitHub repository."},
			{"get_file_contents", "Get the contents of a file or directory from a GitHub repository."},
			{"search_repositories", "Search for GitHub repositories."},
		},
	}
	var out []Entry
	for _, server := range []string{"filesystem", "google-calendar", "memory", "math", "github"} {
		for _, t := range tools[server] {
			out = append(out, Entry{Server: server, Tool: &mcp.Tool{Name: t[0], Description: t[1]}})
		}
	}
	return out
}

func TestRank(t *testing.T) {
	cases := []struct {
		query      string
		wantServer string
		wantTool   string
		within     int // must be in the top n
	}{
		{"read file", "filesystem", "read_text_file", 1},
		{"add two numbers", "math", "add", 1},
		{"knowledge graph entities", "memory", "create_entities", 2},
		{"calendar events", "google-calendar", "list_events", 2},
		{"calender", "google-calendar", "list_calendars", 3}, // typo
		{"calender events", "google-calendar", "list_events", 3},
		{"fielsystem read", "filesystem", "read_text_file", 3}, // typo in the server name
		{"readFile", "filesystem", "read_text_file", 3},        // camelCase
		{"entity", "memory", "create_entities", 2},             // singular of a plural
		{"repo", "github", "search_repositories", 3},           // prefix
	}
	entries := catalogue()
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			hits := Rank(c.query, entries, 5)
			for i, h := range hits {
				if i >= c.within {
					break
				}
				if h.Server == c.wantServer && h.Tool.Name == c.wantTool {
					return
				}
			}
			t.Fatalf("%s.%s not in the top %d: %v", c.wantServer, c.wantTool, c.within, describe(hits))
		})
	}
}

func TestRankNoMatch(t *testing.T) {
	if hits := Rank("zebra", catalogue(), 5); len(hits) != 0 {
		t.Fatalf("unexpected hits: %v", describe(hits))
	}
	if hits := Rank("  ", catalogue(), 5); hits != nil {
		t.Fatalf("empty query gave hits: %v", describe(hits))
	}
}

// TestRankServerDescription: a server's own description (from its config
// entry) finds its tools.
func TestRankServerDescription(t *testing.T) {
	x := wordIndex{description: "Payroll and invoices of the accounting department."}
	tools := []*mcp.Tool{{Name: "list_items", Description: "List the items."}}
	entries := catalogue()
	for i, w := range x.of("acme", tools) {
		entries = append(entries, Entry{Server: "acme", Tool: tools[i], words: w})
	}
	hits := Rank("payroll", entries, 3)
	if len(hits) == 0 || hits[0].Server != "acme" {
		t.Fatalf("payroll: %v", describe(hits))
	}
}

// TestRankLongQuery: a query over the budget is cut, and Search says so.
func TestRankLongQuery(t *testing.T) {
	long := strings.Repeat("lorem ipsum dolor sit amet ", 200) + "add two numbers"
	hits, cut := Search(long, catalogue(), 3)
	if cut == "" {
		t.Fatal("a 1,000-word query was not said to be cut")
	}
	if len(hits) == 0 || hits[0].Tool.Name != "add" {
		t.Fatalf("the question at the end of a long query: %v", describe(hits))
	}
	if _, cut := Search("add two numbers", catalogue(), 3); cut != "" {
		t.Fatalf("a short query was said to be cut: %s", cut)
	}
}

// BenchmarkRank1000 ranks a query over a catalogue of 1,000 tools.
func BenchmarkRank1000(b *testing.B) {
	base := catalogue()
	var entries []Entry
	for i := 0; len(entries) < 1000; i++ {
		e := base[i%len(base)]
		entries = append(entries, Entry{Server: fmt.Sprintf("%s%d", e.Server, i/len(base)), Tool: &mcp.Tool{Name: e.Tool.Name, Description: e.Tool.Description}})
	}
	b.ResetTimer()
	for b.Loop() {
		Rank("calender events", entries, 10)
	}
}

func describe(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, fmt.Sprintf("%s.%s(%.1f)", h.Server, h.Tool.Name, h.Score))
	}
	return out
}

// BenchmarkRankIndexed is BenchmarkRank1000 with the search words computed
// in advance, as Pool.Catalogue provides them.
func BenchmarkRankIndexed(b *testing.B) {
	base := catalogue()
	var entries []Entry
	for i := 0; len(entries) < 1000; i++ {
		e := base[i%len(base)]
		server := fmt.Sprintf("%s%d", e.Server, i/len(base))
		entries = append(entries, Entry{Server: server, Tool: e.Tool, words: newToolWords(server, e.Tool)})
	}
	b.ResetTimer()
	for b.Loop() {
		Rank("calender events", entries, 10)
	}
}
