package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// catalogueCommand is the first argument that makes this program serve
// the generated catalogue over stdio instead of benchmarking.
const catalogueCommand = "serve-catalogue"

// catalogueSize is how many tools the catalogue serves.
const catalogueSize = 1000

// serveCatalogue serves the generated catalogue over stdin/stdout. Every
// tool answers with the arguments it received.
func serveCatalogue() error {
	s := mcp.NewServer(&mcp.Implementation{Name: "catalogue", Version: "1"}, &mcp.ServerOptions{PageSize: 2 * catalogueSize})
	for _, t := range catalogueTools() {
		name := t.Name
		s.AddTool(t, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			out, _ := json.Marshal(map[string]any{"ok": true, "tool": name, "received": req.Params.Arguments})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil
		})
	}
	err := s.Run(context.Background(), &mcp.StdioTransport{})
	if err != nil && !strings.Contains(err.Error(), "EOF") {
		fmt.Fprintln(os.Stderr, "catalogue:", err)
	}
	return nil
}

// A resource of the made-up SaaS platform the catalogue describes.
type resource struct {
	noun   string   // singular, snake_case
	fields []string // keys of catalogueFields
}

type field struct {
	typ, desc string
	enum      []string
}

var catalogueFields = map[string]field{
	"title":       {"string", "Short human-readable title.", nil},
	"name":        {"string", "Display name, unique within the workspace.", nil},
	"description": {"string", "Longer free-text description; Markdown is allowed.", nil},
	"email":       {"string", "Email address.", nil},
	"amount":      {"number", "Amount in the currency's minor unit.", nil},
	"currency":    {"string", "ISO 4217 currency code.", []string{"USD", "EUR", "GBP", "JPY", "CHF"}},
	"due_date":    {"string", "Due date, ISO 8601 (YYYY-MM-DD).", nil},
	"start":       {"string", "Start time, RFC 3339.", nil},
	"end":         {"string", "End time, RFC 3339.", nil},
	"owner_id":    {"string", "Id of the user who owns it.", nil},
	"team_id":     {"string", "Id of the team it belongs to.", nil},
	"priority":    {"string", "Priority level.", []string{"low", "normal", "high", "urgent"}},
	"labels":      {"array", "Labels to attach; unknown labels are created.", nil},
	"url":         {"string", "Absolute URL.", nil},
	"quantity":    {"integer", "Number of units.", nil},
	"region":      {"string", "Deployment region.", []string{"us-east", "us-west", "eu-central", "ap-south"}},
	"visibility":  {"string", "Who can see it.", []string{"private", "team", "workspace", "public"}},
	"body":        {"string", "Content body, plain text or Markdown.", nil},
	"phone":       {"string", "Phone number in E.164 format.", nil},
	"sku":         {"string", "Stock keeping unit code.", nil},
}

var catalogueResources = []resource{
	{"contact", []string{"name", "email", "phone", "owner_id"}},
	{"company", []string{"name", "url", "owner_id", "region"}},
	{"deal", []string{"title", "amount", "currency", "owner_id"}},
	{"lead", []string{"name", "email", "owner_id", "priority"}},
	{"invoice", []string{"amount", "currency", "due_date", "description"}},
	{"payment", []string{"amount", "currency", "description"}},
	{"subscription", []string{"sku", "quantity", "currency"}},
	{"product", []string{"name", "sku", "amount", "currency"}},
	{"order", []string{"sku", "quantity", "amount", "currency"}},
	{"refund", []string{"amount", "currency", "description"}},
	{"ticket", []string{"title", "body", "priority", "owner_id"}},
	{"incident", []string{"title", "body", "priority", "team_id"}},
	{"alert", []string{"title", "priority", "team_id"}},
	{"runbook", []string{"title", "body", "team_id"}},
	{"event", []string{"title", "start", "end", "visibility"}},
	{"meeting", []string{"title", "start", "end", "owner_id"}},
	{"calendar", []string{"name", "visibility", "owner_id"}},
	{"task", []string{"title", "due_date", "priority", "owner_id"}},
	{"project", []string{"name", "description", "team_id", "visibility"}},
	{"milestone", []string{"title", "due_date", "description"}},
	{"sprint", []string{"name", "start", "end", "team_id"}},
	{"epic", []string{"title", "description", "owner_id"}},
	{"document", []string{"title", "body", "visibility"}},
	{"page", []string{"title", "body", "visibility", "labels"}},
	{"folder", []string{"name", "visibility", "owner_id"}},
	{"file", []string{"name", "url", "visibility"}},
	{"comment", []string{"body", "owner_id"}},
	{"note", []string{"title", "body", "labels"}},
	{"repository", []string{"name", "description", "visibility"}},
	{"branch", []string{"name", "description"}},
	{"pull_request", []string{"title", "body", "labels"}},
	{"release", []string{"name", "body", "url"}},
	{"pipeline", []string{"name", "region", "team_id"}},
	{"deployment", []string{"name", "region", "description"}},
	{"environment", []string{"name", "region", "visibility"}},
	{"secret", []string{"name", "description", "team_id"}},
	{"webhook", []string{"url", "description", "labels"}},
	{"api_key", []string{"name", "owner_id", "description"}},
	{"user", []string{"name", "email", "phone", "team_id"}},
	{"team", []string{"name", "description", "visibility"}},
	{"role", []string{"name", "description"}},
	{"dashboard", []string{"title", "description", "visibility"}},
	{"report", []string{"title", "description", "owner_id"}},
	{"metric", []string{"name", "description", "labels"}},
	{"dataset", []string{"name", "description", "region"}},
	{"campaign", []string{"name", "start", "end", "amount"}},
	{"newsletter", []string{"title", "body", "start"}},
	{"survey", []string{"title", "description", "end"}},
	{"warehouse", []string{"name", "region", "phone"}},
	{"shipment", []string{"sku", "quantity", "due_date", "region"}},
}

// An operation every resource offers, with the shape of its arguments.
type operation struct {
	verb string
	desc string // %[1]s is the noun, %[2]s the plural
	// args: "id" (the resource id), "fields" (the resource's fields),
	// "query" (list filters), or named extras.
	args []string
}

var catalogueOps = []operation{
	{"list", "List %[2]s visible to the caller, newest first. Supports filtering, sorting and cursor pagination.", []string{"query"}},
	{"get", "Get one %[1]s by id, with all its fields.", []string{"id", "include"}},
	{"create", "Create a new %[1]s. Returns the created %[1]s with its id.", []string{"fields"}},
	{"update", "Update fields of an existing %[1]s. Fields that are not given are left unchanged.", []string{"id", "fields"}},
	{"delete", "Delete a %[1]s permanently. This cannot be undone; prefer archive.", []string{"id", "confirm"}},
	{"search", "Full-text search over %[2]s. Returns the best matches with highlighted snippets.", []string{"text", "limit"}},
	{"archive", "Archive a %[1]s: it is hidden from lists but can be restored.", []string{"id", "reason"}},
	{"restore", "Restore an archived %[1]s.", []string{"id"}},
	{"export", "Export %[2]s matching a filter as CSV or JSON; returns a download URL.", []string{"query", "format"}},
	{"import", "Import %[2]s from a CSV or JSON file at a URL. Existing ids are updated.", []string{"source_url", "format", "dry_run"}},
	{"count", "Count %[2]s matching a filter.", []string{"query"}},
	{"assign", "Assign a %[1]s to a user.", []string{"id", "assignee_id", "notify"}},
	{"add_comment", "Add a comment to a %[1]s.", []string{"id", "text", "mentions"}},
	{"add_labels", "Add labels to a %[1]s.", []string{"id", "labels_arg"}},
	{"remove_labels", "Remove labels from a %[1]s.", []string{"id", "labels_arg"}},
	{"watch", "Subscribe the caller to changes of a %[1]s.", []string{"id", "channel"}},
	{"unwatch", "Stop notifying the caller about a %[1]s.", []string{"id"}},
	{"duplicate", "Make a copy of a %[1]s, optionally with a new name.", []string{"id", "new_name"}},
	{"move", "Move a %[1]s to another project or workspace.", []string{"id", "target_id"}},
	{"history", "Show the change history of a %[1]s: who changed what, and when.", []string{"id", "limit", "since"}},
}

func plural(noun string) string {
	switch {
	case strings.HasSuffix(noun, "y") && !strings.HasSuffix(noun, "ey"):
		return strings.TrimSuffix(noun, "y") + "ies"
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "ch"):
		return noun + "es"
	}
	return noun + "s"
}

func prop(typ, desc string) map[string]any { return map[string]any{"type": typ, "description": desc} }

// catalogueTools generates the catalogue: every operation of every
// resource, 1,000 tools, each with a JSON Schema like a real SaaS API's.
func catalogueTools() []*mcp.Tool {
	var tools []*mcp.Tool
	for _, r := range catalogueResources {
		words := strings.ReplaceAll(r.noun, "_", " ")
		for _, op := range catalogueOps {
			props := map[string]any{}
			var required []string
			for _, a := range op.args {
				required = append(required, addArg(props, a, r, op, words)...)
			}
			schema := map[string]any{"type": "object", "properties": props}
			if len(required) > 0 {
				schema["required"] = required
			}
			tools = append(tools, &mcp.Tool{
				Name:        r.noun + "_" + op.verb,
				Description: fmt.Sprintf(op.desc, words, plural(words)),
				InputSchema: schema,
			})
		}
	}
	return tools
}

// addArg adds the properties of operation argument a to props and returns
// the names it requires.
func addArg(props map[string]any, a string, r resource, op operation, words string) []string {
	switch a {
	case "id":
		props["id"] = prop("string", "Id of the "+words+".")
		return []string{"id"}
	case "fields":
		return addFields(props, r, op)
	case "query":
		props["filter"] = prop("string", "Filter expression, e.g. `owner_id = 'u_12' AND created > 2024-01-01`.")
		props["sort"] = map[string]any{"type": "string", "description": "Field to sort by.", "enum": append([]string{"created", "updated"}, r.fields[0])}
		props["order"] = map[string]any{"type": "string", "enum": []string{"asc", "desc"}, "default": "desc"}
		props["limit"] = map[string]any{"type": "integer", "description": "Page size.", "minimum": 1, "maximum": 100, "default": 25}
		props["cursor"] = prop("string", "Opaque cursor from the previous page's next_cursor.")
		return nil
	}
	f, ok := fixedArgs[a]
	if !ok {
		return nil
	}
	props[f.name] = f.schema()
	if f.required {
		return []string{f.name}
	}
	return nil
}

// addFields adds a resource's own fields; create requires the first.
func addFields(props map[string]any, r resource, op operation) []string {
	for _, name := range r.fields {
		fd := catalogueFields[name]
		p := prop(fd.typ, fd.desc)
		if fd.enum != nil {
			p["enum"] = fd.enum
		}
		if fd.typ == "array" {
			p["items"] = map[string]any{"type": "string"}
		}
		props[name] = p
	}
	if op.verb == "create" {
		return []string{r.fields[0]}
	}
	return nil
}

func stringArray(desc string) map[string]any {
	return map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": desc}
}

// fixedArgs are the arguments whose schema is the same for every
// resource: the property's name, its schema, and whether it is required.
var fixedArgs = map[string]struct {
	name     string
	schema   func() map[string]any
	required bool
}{
	"include": {"include", func() map[string]any {
		return map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []string{"owner", "comments", "labels", "history"}}, "description": "Related objects to embed."}
	}, false},
	"confirm": {"confirm", func() map[string]any { return prop("boolean", "Must be true; guards against accidental deletion.") }, true},
	"text":    {"text", func() map[string]any { return prop("string", "Text to search for or to post.") }, true},
	"limit": {"limit", func() map[string]any {
		return map[string]any{"type": "integer", "description": "Maximum number of results.", "minimum": 1, "maximum": 100, "default": 10}
	}, false},
	"reason": {"reason", func() map[string]any { return prop("string", "Why it is archived; shown in the history.") }, false},
	"format": {"format", func() map[string]any {
		return map[string]any{"type": "string", "enum": []string{"csv", "json"}, "default": "json"}
	}, false},
	"source_url":  {"source_url", func() map[string]any { return prop("string", "URL of the file to import.") }, true},
	"dry_run":     {"dry_run", func() map[string]any { return prop("boolean", "Validate without writing anything.") }, false},
	"assignee_id": {"assignee_id", func() map[string]any { return prop("string", "Id of the user to assign.") }, true},
	"notify":      {"notify", func() map[string]any { return prop("boolean", "Send the assignee a notification.") }, false},
	"mentions":    {"mentions", func() map[string]any { return stringArray("User ids to mention.") }, false},
	"labels_arg":  {"labels", func() map[string]any { return stringArray("Label names.") }, true},
	"channel": {"channel", func() map[string]any {
		return map[string]any{"type": "string", "enum": []string{"email", "inbox", "slack"}, "default": "inbox"}
	}, false},
	"new_name": {"new_name", func() map[string]any {
		return prop("string", "Name of the copy; defaults to the original's name with ' (copy)'.")
	}, false},
	"target_id": {"target_id", func() map[string]any { return prop("string", "Id of the project or workspace to move it to.") }, true},
	"since":     {"since", func() map[string]any { return prop("string", "Only changes after this time, RFC 3339.") }, false},
}
