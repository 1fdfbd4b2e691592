package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Redaction from the attacker's side (issue 21, defect 5): code that
// tries to get a secret or a private value into the sandbox in a form
// the redaction did not look for (JSON-escaped inside JSON text, base64
// in a file read as media or a resource blob, a token written through
// one tool and read back encoded through another, a file or resource
// named with the value). Each piece of code prints what it got as hex,
// which the redaction of the output cannot recognise: if the value
// reached the sandbox, its hex reaches the test.

// hexOf is what the code prints for s.
func hexOf(s string) string { return hex.EncodeToString([]byte(s)) }

// mustNotSee fails when the output holds the hex of any of the values.
func mustNotSee(t *testing.T, got string, values ...string) {
	t.Helper()
	for _, v := range values {
		if strings.Contains(got, hexOf(v)) {
			t.Fatalf("the sandbox got %q:\n%s", v, got)
		}
	}
}

// fsEntry is the filesystem server over dir, with extra entry fields.
func fsEntry(dir string, env map[string]string, extra map[string]any) map[string]any {
	s := npmServer("mcp-server-filesystem", dir)
	e := map[string]any{"command": s.Command, "args": s.Args, "env": env}
	for k, v := range extra {
		e[k] = v
	}
	return e
}

// TestRedactBypassEscapedSecret: everything's get-env returns the
// environment as JSON text, so a secret holding " and \ is escaped once
// more than the result's own JSON escapes it; the code decodes that text
// and must get the secret's name, not its value.
func TestRedactBypassEscapedSecret(t *testing.T) {
	needEnv(t)
	secret := `tok"9f8e\7d6c5b4a`
	s := npmServer("mcp-server-everything")
	s.Env = map[string]string{"SERVICE_TOKEN": secret}
	h, _ := gateHome(t, map[string]any{"everything": s}, nil)
	b := startBridge(t, h)
	got := b.ok(`import json
v = json.loads(await mcp_everything.get_env()).get("SERVICE_TOKEN")
print("got", v.encode().hex())`)
	mustNotSee(t, got, secret)
	mustContain(t, got, "got "+hexOf("<secret:everything.env.SERVICE_TOKEN>"))
}

// TestRedactBypassBase64Files: a file holding a secret (one of the
// server's own env values, as a .env file would) and an email, read
// through the filesystem server's read_media_file, comes back as base64:
// as a resource blob (.bin) and as image data (.png, binary around the
// secret). The code decodes both and gets the secret's name and a token.
func TestRedactBypassBase64Files(t *testing.T) {
	needEnv(t)
	dir := t.TempDir()
	secret, email := "sk-live-4f9a8b7c6d5e", "dana.reyes@example.org"
	if err := os.WriteFile(filepath.Join(dir, "notes.bin"), []byte("API_KEY="+secret+"\nowner: "+email+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe"), "x"+secret+"\x00\xc3\x28"...)
	if err := os.WriteFile(filepath.Join(dir, "pic.png"), png, 0o600); err != nil {
		t.Fatal(err)
	}
	h, _ := gateHome(t, map[string]any{"fs": fsEntry(dir, map[string]string{"API_KEY": secret}, nil)}, nil)
	b := startBridge(t, h, "CODEBRIDGE_REDACT=email")
	got := b.ok(fmt.Sprintf(`import base64
for name in ["notes.bin", "pic.png"]:
    r = await mcp_fs.read_media_file(path=%q + "/" + name, raw=True)
    for c in r["content"] + r.get("structuredContent", {}).get("content", []):
        b64 = c.get("data") or c["resource"]["blob"]
        print(name, c["type"], base64.b64decode(b64).hex())`, dir))
	mustNotSee(t, got, secret, email)
	mustContain(t, got, "notes.bin resource", "pic.png image", hexOf("<secret:fs.env.API_KEY>"), hexOf("owner: <email_1>"))
}

// TestRedactBypassTokenRoundTrip: the code reads a file of contacts (the
// model sees tokens), writes the tokens into another file through
// write_file (the upstream gets the real values: that is what tokens are
// for), then reads that file back as base64 with read_media_file, and as
// text with a digit glued to the phone number so that its pattern no
// longer matches. Neither way turns a token into its value.
func TestRedactBypassTokenRoundTrip(t *testing.T) {
	needEnv(t)
	dir := t.TempDir()
	email, phone := "dana.reyes@example.org", "+1 415 555 0132"
	if err := os.WriteFile(filepath.Join(dir, "contacts.txt"), []byte(email+"\n"+phone+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, _ := gateHome(t, map[string]any{"fs": fsEntry(dir, nil, nil)}, nil)
	b := startBridge(t, h, "CODEBRIDGE_REDACT=email,phone")
	got := b.ok(fmt.Sprintf(`import base64
d = %q
mail, tel = (await mcp_fs.read_text_file(path=d + "/contacts.txt"))["content"].split("\n")[:2]
print("tokens", mail, tel)
await mcp_fs.write_file(path=d + "/out.bin", content="x" + mail + " " + tel + "5")
r = await mcp_fs.read_media_file(path=d + "/out.bin", raw=True)
print("media", base64.b64decode(r["content"][0]["resource"]["blob"]).hex())
print("text", (await mcp_fs.read_text_file(path=d + "/out.bin"))["content"].encode().hex())`, dir))
	mustNotSee(t, got, email, "555 0132")
	mustContain(t, got, "tokens <email_1> <phone_1>", "media "+hexOf("x<email_1> <phone_1>5"))
	b.close()
	mustContain(t, readFile(filepath.Join(dir, "out.bin")), "x"+email+" "+phone+"5") // the upstream got the values
}

// TestRedactBypassNames: a value the code only has as a token becomes the
// name of a resource (everything's gzip-file-as-resource registers one
// under the name it is given) and of a file (written through write_file);
// the code lists the resources (resources/list) and reads the file as
// media (its resource's URI percent-encodes the name). Neither shows the
// value.
func TestRedactBypassNames(t *testing.T) {
	needEnv(t)
	dir := t.TempDir()
	email, phone := "dana.reyes@example.org", "+1 415 555 0132"
	if err := os.WriteFile(filepath.Join(dir, "contacts.txt"), []byte(email+"\n"+phone+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, _ := gateHome(t, map[string]any{"fs": fsEntry(dir, nil, nil), "everything": npmServer("mcp-server-everything")}, nil)
	b := startBridge(t, h, "CODEBRIDGE_REDACT=email,phone")
	got := b.ok(fmt.Sprintf(`d = %q
mail, tel = (await mcp_fs.read_text_file(path=d + "/contacts.txt"))["content"].split("\n")[:2]
await mcp_everything.gzip_file_as_resource(name=mail, data="data:text/plain;base64,aGk=", outputType="resourceLink")
for r in await mcp_everything.list_resources():
    if "/session/" in r["uri"]:
        print("listed", r["name"].encode().hex(), r["uri"].encode().hex())
await mcp_fs.write_file(path=d + "/" + tel + ".bin", content="x")
r = await mcp_fs.read_media_file(path=d + "/" + tel + ".bin", raw=True)
print("uri", r["content"][0]["resource"]["uri"].encode().hex())`, dir))
	mustNotSee(t, got, email, "555 0132", "555%200132")
	mustContain(t, got, "listed "+hexOf("<email_1>"), "uri ")
	if _, err := os.Stat(filepath.Join(dir, phone+".bin")); err != nil {
		t.Fatalf("the upstream did not get the real name: %v", err)
	}
}

// TestRedactRestoreOff: a server entry with "redact": {"restore": false}
// receives the token the code sends, never the value (here: the file
// it writes holds the token).
func TestRedactRestoreOff(t *testing.T) {
	needEnv(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "contacts.txt"), []byte("dana.reyes@example.org\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, _ := gateHome(t, map[string]any{"fs": fsEntry(dir, nil, map[string]any{"redact": map[string]any{"restore": false}})}, nil)
	b := startBridge(t, h, "CODEBRIDGE_REDACT=email")
	got := b.ok(fmt.Sprintf(`d = %q
mail = (await mcp_fs.read_text_file(path=d + "/contacts.txt"))["content"].strip()
await mcp_fs.write_file(path=d + "/out.txt", content="to " + mail)
print("sent", mail)`, dir))
	mustContain(t, got, "sent <email_1>")
	b.close()
	if out := readFile(filepath.Join(dir, "out.txt")); out != "to <email_1>" {
		t.Fatalf("the server received %q, want the token", out)
	}
}

// TestRedactSharedWorkspace: a server that writes into the host directory
// the sandbox uses as its workspace lets a value in without the host (out
// of redaction's reach, hence "restore": false); what the code then hands
// the model besides text is still redacted: an image's bytes, a shared
// file's link (name, URI) and its entry in resources/list, and the file
// when the client reads it.
func TestRedactSharedWorkspace(t *testing.T) {
	localEngineOnly(t, "shares a workspace volume between bridges; the kubernetes engine has none yet")
	needEnv(t)
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	must(t, os.Chmod(ws, 0o777))
	email := "dana.reyes@example.org"
	if err := os.WriteFile(filepath.Join(ws, "contacts.txt"), []byte(email+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, _ := gateHome(t, map[string]any{"fs": fsEntry(ws, nil, nil)}, nil)
	b := startBridge(t, h, "CODEBRIDGE_REDACT=email", "CODEBRIDGE_WORKSPACE="+ws)
	code := fmt.Sprintf(`import os
from mcp.display import display
mail = (await mcp_fs.read_text_file(path=%q + "/contacts.txt"))["content"].strip()
await mcp_fs.write_file(path=%q + "/" + mail + ".csv", content="to," + mail + "\n")
name = [f for f in os.listdir("/workspace") if f.endswith(".csv")][0]
display(b"\x89PNG\r\n\x1a\n" + name.encode())
display("/workspace/" + name)
print("shown")`, ws, ws)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := b.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}})
	if err != nil || res.IsError {
		t.Fatalf("run_python: %v %+v", err, res)
	}
	checkNoEmailInContent(t, res, email)
	lr, err := b.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	for _, r := range lr.Resources {
		if strings.HasPrefix(r.URI, "codebridge://workspace/") {
			listed++
			if strings.Contains(r.Name+r.URI, "dana.reyes") {
				t.Fatalf("resources/list shows the email: %s %s", r.Name, r.URI)
			}
		}
	}
	if listed != 1 {
		t.Fatalf("%d shared files listed, want 1", listed)
	}
	rr, err := b.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "codebridge://workspace/" + email + ".csv"})
	if err != nil || len(rr.Contents) != 1 {
		t.Fatalf("reading the shared file: %v", err)
	}
	if c := rr.Contents[0]; strings.Contains(c.Text+string(c.Blob), email) || !strings.Contains(c.Text, "to,<email_") {
		t.Fatalf("the client read %q", c.Text+string(c.Blob))
	}
}

// checkNoEmailInContent: a run_python result holds "shown", one image and
// one resource link, and neither the image's bytes nor the link shows
// email.
func checkNoEmailInContent(t *testing.T, res *mcp.CallToolResult, email string) {
	t.Helper()
	var images, links int
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			mustContain(t, c.Text, "shown")
		case *mcp.ImageContent:
			images++
			if strings.Contains(string(c.Data), email) {
				t.Fatal("the image's bytes hold the email")
			}
		case *mcp.ResourceLink:
			links++
			if strings.Contains(c.Name+c.URI, strings.Split(email, "@")[0]) {
				t.Fatalf("the link shows the email: %s %s", c.Name, c.URI)
			}
		}
	}
	if images != 1 || links != 1 {
		t.Fatalf("%d images and %d links, want one of each", images, links)
	}
}
