package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// WorkspaceURI is the prefix of the resources that are workspace files:
// codebridge://workspace/<path under /workspace>.
const WorkspaceURI = "codebridge://workspace/"

// MaxResourceBytes is the largest workspace file resources/read (and
// codebridge exec --out) serves.
const MaxResourceBytes = 32 << 20

// workspaceReadTimeout bounds how long reading a workspace file waits for
// the sandbox: a runtime that never answers (stopped, or stuck) must not
// hold the client's request forever.
const workspaceReadTimeout = 30 * time.Second

// sharedFiles are the files the code shared, by URI, in the order they
// were first shared; onShare sees each new one (to list it as an MCP
// resource).
type sharedFiles struct {
	mu      sync.Mutex
	byURI   map[string]protocol.Shared
	order   []string
	onShare func(protocol.Shared)
}

func newSharedFiles() *sharedFiles { return &sharedFiles{byURI: map[string]protocol.Shared{}} }

func (s *sharedFiles) add(sh protocol.Shared) {
	s.mu.Lock()
	_, known := s.byURI[sh.URI]
	s.byURI[sh.URI] = sh
	if !known {
		s.order = append(s.order, sh.URI)
	}
	hook := s.onShare
	s.mu.Unlock()
	if hook != nil {
		hook(sh)
	}
}

func (s *sharedFiles) get(uri string) (protocol.Shared, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh, ok := s.byURI[uri]
	return sh, ok
}

// watch calls f for every file shared so far and from now on.
func (s *sharedFiles) watch(f func(protocol.Shared)) {
	s.mu.Lock()
	s.onShare = f
	var known []protocol.Shared
	for _, u := range s.order {
		known = append(known, s.byURI[u])
	}
	s.mu.Unlock()
	for _, sh := range known {
		f(sh)
	}
}

// workspaceURI is the resource of a path under /workspace, or "" when the
// path is not a clean path of a file in it.
func workspaceURI(p string) string {
	rel, ok := strings.CutPrefix(p, sandbox.WorkspacePath+"/")
	if !ok || rel == "" || path.Clean(p) != p {
		return ""
	}
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		parts[i] = url.PathEscape(part)
	}
	return WorkspaceURI + strings.Join(parts, "/")
}

// workspacePath is the sandbox path of a workspace resource.
func workspacePath(uri string) (string, error) {
	rel, ok := strings.CutPrefix(uri, WorkspaceURI)
	if !ok {
		return "", fmt.Errorf("%q is not a workspace resource (%s<path>)", uri, WorkspaceURI)
	}
	rel, err := url.PathUnescape(rel)
	if err != nil || rel == "" || strings.ContainsRune(rel, 0) {
		return "", fmt.Errorf("%q does not name a file of the workspace", uri)
	}
	for _, part := range strings.Split(rel, "/") {
		if part == ".." {
			return "", fmt.Errorf("%q: '..' is not allowed in a workspace path", uri)
		}
	}
	return path.Join(sandbox.WorkspacePath, rel), nil
}

// shares collects the files a run_python call shared, for its result.
type shares struct {
	mu   sync.Mutex
	list []protocol.Shared
}

// links are the resource links the call's result carries, one per file.
func (s *shares) links() []mcp.Content {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	var out []mcp.Content
	for _, sh := range s.list {
		if seen[sh.URI] {
			continue
		}
		seen[sh.URI] = true
		size := sh.Size
		out = append(out, &mcp.ResourceLink{URI: sh.URI, Name: sh.Name, MIMEType: sh.MIME, Size: &size})
	}
	return out
}

func share(_ context.Context, h *call, p protocol.ShareParams) (json.RawMessage, error) {
	uri := workspaceURI(p.Path)
	if uri == "" {
		return nil, fmt.Errorf("%q is not a file under %s: only workspace files can be shared", p.Path, sandbox.WorkspacePath)
	}
	sh := protocol.Shared{URI: uri, Name: strings.TrimPrefix(p.Path, sandbox.WorkspacePath+"/"), MIME: fileMIME(p.Path, p.MIME, nil), Size: p.Size}
	h.files.add(sh)
	h.shared.mu.Lock()
	h.shared.list = append(h.shared.list, sh)
	h.shared.mu.Unlock()
	return json.Marshal(sh)
}

// fileMIME is a file's media type: the one given, else its extension's,
// else sniffed from data.
func fileMIME(p, given string, data []byte) string {
	if given != "" && given != "application/octet-stream" {
		return given
	}
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		return t
	}
	if data != nil {
		return http.DetectContentType(data)
	}
	return "application/octet-stream"
}

// isText reports whether a file of this media type, with this content, is
// served as text (else as a blob).
func isText(mimeType string, data []byte) bool {
	t, _, _ := mime.ParseMediaType(mimeType)
	textual := strings.HasPrefix(t, "text/") || strings.HasSuffix(t, "+json") || strings.HasSuffix(t, "+xml") ||
		t == "application/json" || t == "application/xml" || t == "application/javascript"
	return textual && utf8.Valid(data)
}

// addWorkspace serves workspace files as resources on s: a template for
// any workspace path, and one listed resource per shared file.
func (b *Bridge) addWorkspace(s *mcp.Server) {
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: WorkspaceURI + "{+path}",
		Name:        "workspace",
		Title:       "A file of the sandbox's /workspace",
		Description: fmt.Sprintf("Any file under /workspace in the sandbox, by its path; at most %d MiB.", MaxResourceBytes>>20),
	}, b.readWorkspace)
	// Shared files are listed for the single (stdio) session only: over
	// HTTP a session reads its own files through the template, and never
	// sees another session's in the list.
	// A name or URI that holds a hidden value is listed redacted (and
	// cannot be read by it), as a resource link is.
	b.single.host.files.watch(func(sh protocol.Shared) {
		r := &mcp.Resource{URI: sh.URI, Name: sh.Name, MIMEType: sh.MIME, Size: sh.Size, Description: "a file the code shared"}
		if g := b.single.host.gate; g != nil {
			r.URI, r.Name = g.Redact(r.URI), g.Redact(r.Name)
		}
		s.AddResource(r, b.readWorkspace)
	})
}

func (b *Bridge) readWorkspace(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	if b.stateless(req.Session) {
		return nil, errStatelessResource
	}
	sess, err := b.sessionOf(req.Session, req.Extra)
	if err != nil {
		return nil, err
	}
	data, mimeType, err := sess.readWorkspace(ctx, uri)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	if g := sess.host.gate; g != nil { // the model reads it: redacted as run_python's output is
		data = []byte(g.Redact(string(data)))
	}
	rc := &mcp.ResourceContents{URI: uri, MIMEType: mimeType}
	if isText(mimeType, data) {
		rc.Text = string(data)
	} else {
		rc.Blob = data
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{rc}}, nil
}

// ReadWorkspace reads the workspace file a codebridge://workspace/ URI
// names, and its media type. The sandbox refuses paths that escape the
// workspace (.., symlinks); a file over [MaxResourceBytes] is an error
// that says so.
func (b *Bridge) ReadWorkspace(ctx context.Context, uri string) ([]byte, string, error) {
	return b.single.readWorkspace(ctx, uri)
}

func (sess *session) readWorkspace(ctx context.Context, uri string) ([]byte, string, error) {
	p, err := workspacePath(uri)
	if err != nil {
		return nil, "", err
	}
	gctx, cancel := context.WithTimeout(ctx, workspaceReadTimeout)
	defer cancel()
	data, err := sess.sbx.Get(gctx, p, MaxResourceBytes)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, "", fmt.Errorf("reading %s: the sandbox did not answer within %v (its runtime is stopped or stuck, or the sandbox is slow to start): try again; if it keeps failing, run code in the session, which is interrupted at its timeout and restarts a sandbox that does not answer", uri, workspaceReadTimeout)
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", uri, err)
	}
	given := ""
	if sh, ok := sess.host.files.get(uri); ok {
		given = sh.MIME
	}
	return data, fileMIME(p, given, data), nil
}

// WorkspaceRel is the path under /workspace that a workspace resource
// names ("data/out.csv").
func WorkspaceRel(uri string) (string, error) {
	p, err := workspacePath(uri)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(p, sandbox.WorkspacePath+"/"), nil
}
