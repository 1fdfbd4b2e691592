package discovery

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// wantProblem describes an expected Problem. File is relative to the home
// directory; every string in Contains must appear in the message.
type wantProblem struct {
	File, Server, Field string
	Is                  error
	Contains            []string
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name string
		// files maps paths relative to the home directory to contents; a
		// path ending in "/" makes a directory.
		files map[string]string
		// extra lists the Options.Files, relative to the home directory.
		extra []string
		env   map[string]string
		// servers lists "name@file" in the expected order.
		servers  []string
		problems []wantProblem
		// check, if set, looks at the loaded servers in detail.
		check func(t *testing.T, home string, got []Server)
	}{
		{
			name: "sorted files, then extra files in order given",
			files: map[string]string{
				"MCPs/b.json":            `{"mcpServers": {"b1": {"command": "b1"}, "b0": {"command": "b0"}}}`,
				"MCPs/a.json":            `{"mcpServers": {"z": {"command": "z"}}}`,
				"MCPs/c.json":            `{"mcpServers": {}}`,
				"MCPs/notes.txt":         `not json at all`,
				"MCPs/a.json.bak":        `not json at all`,
				"MCPs/.hidden.json":      `not json at all`,
				"MCPs/dir.json/":         "",
				"extra2.json":            `{"mcpServers": {"x2": {"command": "x2"}}}`,
				"conf/extra1.json":       `{"mcpServers": {"x1": {"command": "x1"}}}`,
				"MCPs/sub/ignored.json/": "",
			},
			extra:   []string{"extra2.json", "conf/extra1.json"},
			servers: []string{"z@MCPs/a.json", "b1@MCPs/b.json", "b0@MCPs/b.json", "x2@extra2.json", "x1@conf/extra1.json"},
		},
		{
			name: "key order within a file and names as written",
			files: map[string]string{
				"MCPs/servers.json": `{"other": 1, "mcpServers": {
					"zeta": {"command": "z"},
					"alpha": {"command": "a"},
					"Mid": {"command": "m"},
					"ünï.côdé": {"command": "u"},
					"dotted.name-1": {"command": "d"},
					"with space": {"command": "s"}
				}}`,
			},
			servers: []string{"zeta@MCPs/servers.json", "alpha@MCPs/servers.json", "Mid@MCPs/servers.json",
				"ünï.côdé@MCPs/servers.json", "dotted.name-1@MCPs/servers.json", "with space@MCPs/servers.json"},
		},
		{
			name: "duplicate names",
			files: map[string]string{
				"MCPs/a.json": `{"mcpServers": {"fs": {"command": "first"}}}`,
				"MCPs/b.json": `{"mcpServers": {"fs": {"command": "second"}, "own": {"command": "o"}}}`,
				"MCPs/c.json": `{"mcpServers": {"twice": {"command": "t1"}, "twice": {"command": "t2"}}}`,
				"extra.json":  `{"mcpServers": {"own": {"url": "https://example.com/mcp"}}}`,
			},
			extra:   []string{"extra.json"},
			servers: []string{"fs@MCPs/a.json", "own@MCPs/b.json", "twice@MCPs/c.json"},
			problems: []wantProblem{
				{File: "MCPs/b.json", Server: "fs", Is: ErrDuplicate, Contains: []string{"MCPs/a.json", "ignored"}},
				{File: "MCPs/c.json", Server: "twice", Is: ErrDuplicate, Contains: []string{"twice in this file"}},
				{File: "extra.json", Server: "own", Is: ErrDuplicate, Contains: []string{"MCPs/b.json"}},
			},
			check: func(t *testing.T, home string, got []Server) {
				if got[0].Command != "first" || got[2].Command != "t1" {
					t.Errorf("the first definitions should win: %+v", got)
				}
			},
		},
		{
			name: "a file given twice, or also in MCPs, is read once",
			files: map[string]string{
				"MCPs/a.json": `{"mcpServers": {"a": {"command": "a"}}}`,
				"b.json":      `{"mcpServers": {"b": {"command": "b"}}}`,
			},
			extra:   []string{"MCPs/a.json", "b.json", "b.json"},
			servers: []string{"a@MCPs/a.json", "b@b.json"},
		},
		{
			name: "broken files next to good ones",
			files: map[string]string{
				"MCPs/1-broken.json":   "{\"mcpServers\": {\n  \"x\": {\"command\": \"x\",}\n}}",
				"MCPs/2-good.json":     "\ufeff" + `{"mcpServers": {"good": {"command": "g"}}}`,
				"MCPs/3-empty.json":    " \n",
				"MCPs/4-array.json":    `[{"command": "x"}]`,
				"MCPs/5-list.json":     `{"mcpServers": [{"command": "x"}]}`,
				"MCPs/6-none.json":     `{"other": {}}`,
				"MCPs/7-vscode.json":   `{"servers": {"x": {"command": "x"}}}`,
				"MCPs/8-null.json":     `null`,
				"MCPs/9-trailing.json": `{"mcpServers": {}} {}`,
				"after.json":           `{"mcpServers": {"after": {"command": "a"}}}`,
				"adir.json/":           "",
			},
			extra:   []string{"missing.json", "adir.json", "after.json"},
			servers: []string{"good@MCPs/2-good.json", "after@after.json"},
			problems: []wantProblem{
				{File: "MCPs/1-broken.json", Contains: []string{"invalid JSON at line 2, column 24", "trailing commas"}},
				{File: "MCPs/3-empty.json", Contains: []string{"empty"}},
				{File: "MCPs/4-array.json", Contains: []string{"holds an array, not a JSON object"}},
				{File: "MCPs/5-list.json", Field: "mcpServers", Contains: []string{"must be an object", "not an array"}},
				{File: "MCPs/6-none.json", Field: "mcpServers", Contains: []string{"is missing"}},
				{File: "MCPs/7-vscode.json", Field: "mcpServers", Contains: []string{`rename "servers" to "mcpServers"`}},
				{File: "MCPs/8-null.json", Contains: []string{"holds null"}},
				{File: "MCPs/9-trailing.json", Contains: []string{"invalid JSON"}},
				{File: "missing.json", Contains: []string{"cannot read the file: no such file or directory"}},
				{File: "adir.json", Contains: []string{"cannot read the file: is a directory"}},
			},
		},
		{
			name: "disabled entries are skipped silently and do not claim the name",
			files: map[string]string{
				"MCPs/a.json": `{"mcpServers": {
					"off": {"command": "x", "disabled": true},
					"offAndBroken": {"disabled": true, "args": 7},
					"on": {"command": "y", "disabled": false},
					"nullDisabled": {"command": "y", "disabled": null},
					"quoted": {"command": "x", "disabled": "true"},
					"fs": {"command": "old", "disabled": true}
				}}`,
				"MCPs/b.json": `{"mcpServers": {"fs": {"command": "new"}}}`,
			},
			servers: []string{"on@MCPs/a.json", "nullDisabled@MCPs/a.json", "fs@MCPs/b.json"},
			problems: []wantProblem{
				{File: "MCPs/a.json", Server: "quoted", Field: "disabled", Contains: []string{"must be true or false, not a string"}},
			},
		},
		{
			name: "variable expansion",
			env:  map[string]string{"TOKEN": "t0k", "EMPTY": "", "DIR": "/srv"},
			files: map[string]string{
				"MCPs/a.json": `{"mcpServers": {
					"ok": {"command": "${TOKEN}",
					       "args": ["--token=${TOKEN}", "${MISSING:-dflt}", "$TOKEN", "${EMPTY:-x}", "${ not}", "${1A}", "${TOKEN", "${A:-}", "$${TOKEN}"],
					       "env": {"A": "${TOKEN}-${TOKEN}", "B": "${MISSING:-a b}"},
					       "cwd": "${DIR}/work"},
					"remote": {"url": "https://${MISSING:-example.com}/mcp?k=${TOKEN}",
					           "headers": {"Authorization": "Bearer ${TOKEN}"}},
					"unsetArg": {"command": "x", "args": ["ok", "${NOPE}"]},
					"unsetEnv": {"command": "x", "env": {"K": "${NOPE} ${NOPE2} ${NOPE}"}},
					"unsetHeader": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${SECRET_TOKEN}"}},
					"unsetURL": {"url": "https://${HOSTNAME_X}/mcp"},
					"unsetCwd": {"command": "x", "cwd": "~/${SUBDIR}"}
				}}`,
			},
			servers: []string{"ok@MCPs/a.json", "remote@MCPs/a.json"},
			problems: []wantProblem{
				{File: "MCPs/a.json", Server: "unsetArg", Field: "args[1]", Is: ErrUnsetVariable, Contains: []string{`"NOPE" is not set`, "${NOPE:-default}"}},
				{File: "MCPs/a.json", Server: "unsetEnv", Field: "env.K", Is: ErrUnsetVariable, Contains: []string{`"NOPE", "NOPE2" are not set`}},
				{File: "MCPs/a.json", Server: "unsetHeader", Field: "headers.Authorization", Is: ErrUnsetVariable, Contains: []string{`"SECRET_TOKEN"`}},
				{File: "MCPs/a.json", Server: "unsetURL", Field: "url", Is: ErrUnsetVariable, Contains: []string{`"HOSTNAME_X"`}},
				{File: "MCPs/a.json", Server: "unsetCwd", Field: "cwd", Is: ErrUnsetVariable, Contains: []string{`"SUBDIR"`}},
			},
			check: func(t *testing.T, home string, got []Server) {
				ok := got[0]
				// The command is not expanded: only args, env, headers, url and cwd are.
				want := Server{
					Name:    "ok",
					Command: "${TOKEN}",
					Args:    []string{"--token=t0k", "dflt", "$TOKEN", "", "${ not}", "${1A}", "${TOKEN", "", "$t0k"},
					Env:     map[string]string{"A": "t0k-t0k", "B": "a b"},
					Cwd:     "/srv/work",
					Source:  filepath.Join(home, "MCPs/a.json"),
				}
				if !reflect.DeepEqual(ok, want) {
					t.Errorf("got  %#v\nwant %#v", ok, want)
				}
				remote := got[1]
				if remote.URL != "https://example.com/mcp?k=t0k" || remote.Headers["Authorization"] != "Bearer t0k" || remote.Command != "" {
					t.Errorf("remote: %+v", remote)
				}
			},
		},
		{
			name: "remote servers and transport types",
			files: map[string]string{
				"MCPs/a.json": `{"mcpServers": {
					"remote": {"url": "https://example.com/mcp", "headers": {"X-Key": "k"}, "description": "Remote one"},
					"typedHTTP": {"type": "http", "url": "http://localhost:8080/mcp"},
					"typedStreamable": {"type": "streamable-http", "url": "https://example.com/mcp"},
					"typedStdio": {"type": "stdio", "command": "npx", "timeout": 30, "autoApprove": ["x"]},
					"sse": {"type": "sse", "url": "https://example.com/sse"},
					"stdioURL": {"type": "stdio", "url": "https://example.com/mcp"},
					"httpCommand": {"type": "http", "command": "npx"},
					"ws": {"type": "websocket", "url": "wss://example.com"},
					"ftp": {"url": "ftp://example.com/mcp"},
					"hostless": {"url": "example.com/mcp"},
					"both": {"command": "npx", "url": "https://example.com/mcp"},
					"neither": {"args": ["x"]},
					"emptyCommand": {"command": ""},
					"emptyURL": {"url": ""},
					"badTimeout": {"command": "npx", "timeout": "soon"}
				}}`,
			},
			servers: []string{"remote@MCPs/a.json", "typedHTTP@MCPs/a.json", "typedStreamable@MCPs/a.json", "typedStdio@MCPs/a.json"},
			problems: []wantProblem{
				{File: "MCPs/a.json", Server: "sse", Field: "type", Contains: []string{"SSE transport is not supported; use streamable HTTP"}},
				{File: "MCPs/a.json", Server: "stdioURL", Field: "type", Contains: []string{`is "stdio" but the entry has a "url"`}},
				{File: "MCPs/a.json", Server: "httpCommand", Field: "type", Contains: []string{`is "http" but the entry has a "command"`}},
				{File: "MCPs/a.json", Server: "ws", Field: "type", Contains: []string{`unknown transport "websocket"`}},
				{File: "MCPs/a.json", Server: "ftp", Field: "url", Contains: []string{`"ftp://example.com/mcp" is not an http or https URL`}},
				{File: "MCPs/a.json", Server: "hostless", Field: "url", Contains: []string{"not an http or https URL"}},
				{File: "MCPs/a.json", Server: "both", Contains: []string{`has both "command" and "url"`}},
				{File: "MCPs/a.json", Server: "neither", Contains: []string{`has neither "command" nor "url"`}},
				{File: "MCPs/a.json", Server: "emptyCommand", Field: "command", Contains: []string{"is empty"}},
				{File: "MCPs/a.json", Server: "emptyURL", Field: "url", Contains: []string{"is empty"}},
				{File: "MCPs/a.json", Server: "badTimeout", Field: "timeout", Contains: []string{"positive number of seconds"}},
			},
			check: func(t *testing.T, home string, got []Server) {
				want := Server{Name: "remote", URL: "https://example.com/mcp", Headers: map[string]string{"X-Key": "k"},
					Description: "Remote one", Source: filepath.Join(home, "MCPs/a.json")}
				if !reflect.DeepEqual(got[0], want) {
					t.Errorf("got  %#v\nwant %#v", got[0], want)
				}
			},
		},
		{
			name: "wrong types",
			files: map[string]string{
				"MCPs/a.json": `{"mcpServers": {
					"good": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}, "cwd": "/tmp", "description": "d"},
					"str": "npx -y pkg",
					"nil": null,
					"list": ["npx"],
					"": {"command": "x"},
					"cmdNumber": {"command": 5},
					"argsString": {"command": "x", "args": "-y pkg"},
					"argsItems": {"command": "x", "args": ["ok", 1, null, {"a": 1}]},
					"envArray": {"command": "x", "env": ["K=v"]},
					"envNumber": {"command": "x", "env": {"PORT": 8080, "OK": "v", "B": true}},
					"envBadName": {"command": "x", "env": {"A=B": "v"}},
					"cwdBool": {"command": "x", "cwd": true},
					"headersString": {"url": "https://example.com/mcp", "headers": "Authorization: x"},
					"descNumber": {"command": "x", "description": 5},
					"typeNumber": {"command": "x", "type": 1},
					"urlObject": {"url": {"href": "https://example.com"}},
					"nulls": {"command": "x", "args": null, "env": null, "cwd": null, "url": null, "type": null}
				}}`,
			},
			servers: []string{"good@MCPs/a.json", "nulls@MCPs/a.json"},
			problems: []wantProblem{
				{File: "MCPs/a.json", Server: "str", Contains: []string{"must be an object, not a string"}},
				{File: "MCPs/a.json", Server: "nil", Contains: []string{"must be an object, not null"}},
				{File: "MCPs/a.json", Server: "list", Contains: []string{"must be an object, not an array"}},
				{File: "MCPs/a.json", Contains: []string{"empty name"}},
				{File: "MCPs/a.json", Server: "cmdNumber", Field: "command", Contains: []string{"must be a string, not a number"}},
				{File: "MCPs/a.json", Server: "argsString", Field: "args", Contains: []string{"must be an array of strings, not a string"}},
				{File: "MCPs/a.json", Server: "argsItems", Field: "args[1]", Contains: []string{"not a number"}},
				{File: "MCPs/a.json", Server: "argsItems", Field: "args[2]", Contains: []string{"not null"}},
				{File: "MCPs/a.json", Server: "argsItems", Field: "args[3]", Contains: []string{"not an object"}},
				{File: "MCPs/a.json", Server: "envArray", Field: "env", Contains: []string{"must be an object of strings, not an array"}},
				{File: "MCPs/a.json", Server: "envNumber", Field: "env.B", Contains: []string{"not a boolean"}},
				{File: "MCPs/a.json", Server: "envNumber", Field: "env.PORT", Contains: []string{"not a number", "double quotes"}},
				{File: "MCPs/a.json", Server: "envBadName", Field: "env", Contains: []string{`invalid variable name "A=B"`}},
				{File: "MCPs/a.json", Server: "cwdBool", Field: "cwd", Contains: []string{"not a boolean"}},
				{File: "MCPs/a.json", Server: "headersString", Field: "headers", Contains: []string{"not a string"}},
				{File: "MCPs/a.json", Server: "descNumber", Field: "description", Contains: []string{"not a number"}},
				{File: "MCPs/a.json", Server: "typeNumber", Field: "type", Contains: []string{"not a number"}},
				{File: "MCPs/a.json", Server: "urlObject", Field: "url", Contains: []string{"not an object"}},
			},
			check: func(t *testing.T, home string, got []Server) {
				want := Server{Name: "good", Command: "npx", Args: []string{"-y", "pkg"}, Env: map[string]string{"K": "v"},
					Cwd: "/tmp", Description: "d", Source: filepath.Join(home, "MCPs/a.json")}
				if !reflect.DeepEqual(got[0], want) {
					t.Errorf("got  %#v\nwant %#v", got[0], want)
				}
			},
		},
		{
			name: "missing MCPs directory",
			files: map[string]string{
				"only.json": `{"mcpServers": {"only": {"command": "x"}}}`,
			},
			extra:   []string{"only.json"},
			servers: []string{"only@only.json"},
		},
		{
			name:     "MCPs is a file",
			files:    map[string]string{"MCPs": `{"mcpServers": {"x": {"command": "x"}}}`},
			problems: []wantProblem{{File: "MCPs", Contains: []string{"is not a directory"}}},
		},
		{
			name: "nothing at all",
		},
		{
			name: "tilde in cwd",
			env:  map[string]string{"SUB": "proj"},
			files: map[string]string{
				"MCPs/a.json": `{"mcpServers": {
					"home": {"command": "x", "cwd": "~"},
					"under": {"command": "x", "cwd": "~/work/${SUB}"},
					"user": {"command": "x", "cwd": "~bob/x"},
					"middle": {"command": "x", "cwd": "/a/~/b"},
					"relative": {"command": "x", "cwd": "rel/dir"}
				}}`,
			},
			servers: []string{"home@MCPs/a.json", "under@MCPs/a.json", "user@MCPs/a.json", "middle@MCPs/a.json", "relative@MCPs/a.json"},
			check: func(t *testing.T, home string, got []Server) {
				want := []string{home, home + "/work/proj", "~bob/x", "/a/~/b", "rel/dir"}
				for i, s := range got {
					if s.Cwd != want[i] {
						t.Errorf("%s: cwd %q, want %q", s.Name, s.Cwd, want[i])
					}
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			for name, content := range tt.files {
				p := filepath.Join(home, name)
				if strings.HasSuffix(name, "/") {
					mkdir(t, p)
					continue
				}
				writeFile(t, p, content)
			}
			var extra []string
			for _, f := range tt.extra {
				extra = append(extra, filepath.Join(home, f))
			}
			servers, problems := Load(Options{Home: home, Files: extra, LookupEnv: lookupIn(tt.env)})

			var got []string
			for _, s := range servers {
				got = append(got, s.Name+"@"+rel(t, home, s.Source))
			}
			if !reflect.DeepEqual(got, tt.servers) {
				t.Errorf("servers:\n got  %q\n want %q", got, tt.servers)
			}
			checkProblems(t, home, problems, tt.problems)
			if tt.check != nil && len(servers) == len(tt.servers) {
				tt.check(t, home, servers)
			}
		})
	}
}

// A file that cannot be read is reported with its path, and the others
// still load. A dangling symlink is unreadable even for root, so the test
// runs everywhere (CI runs as root).
func TestUnreadableFile(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "MCPs/b.json"), `{"mcpServers": {"b": {"command": "b"}}}`)
	if err := os.Symlink(filepath.Join(home, "gone.json"), filepath.Join(home, "MCPs/a.json")); err != nil {
		t.Fatal(err)
	}
	servers, problems := Load(Options{Home: home, LookupEnv: lookupIn(nil)})
	if len(servers) != 1 || servers[0].Name != "b" {
		t.Errorf("servers: %+v", servers)
	}
	checkProblems(t, home, problems, []wantProblem{{File: "MCPs/a.json", Contains: []string{"cannot read the file: no such file or directory"}}})
}

func TestSelfReference(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	other := filepath.Join(dir, "other")
	mkdir(t, bin)
	mkdir(t, other)
	// bin/codebridge is a symlink to this test binary; other/codebridge is a
	// different program with the same name.
	if err := os.Symlink(exe, filepath.Join(bin, "codebridge")); err != nil {
		t.Skip("cannot make symlinks:", err)
	}
	writeFile(t, filepath.Join(other, "codebridge"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(other, "codebridge"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A file named codebridge that is not executable is passed over, like
	// exec.LookPath does.
	notExec := filepath.Join(dir, "notexec")
	mkdir(t, notExec)
	writeFile(t, filepath.Join(notExec, "codebridge"), "")

	home := t.TempDir()
	writeFile(t, filepath.Join(home, "MCPs/a.json"), `{"mcpServers": {
		"viaEntryPATH": {"command": "codebridge", "env": {"PATH": "`+bin+`"}},
		"viaProcessPATH": {"command": "codebridge"},
		"absolute": {"command": "`+exe+`"},
		"symlink": {"command": "`+filepath.Join(bin, "codebridge")+`"},
		"relativeToCwd": {"command": "./bin/codebridge", "cwd": "`+dir+`"},
		"otherProgram": {"command": "codebridge", "env": {"PATH": "`+other+`"}},
		"shadowed": {"command": "codebridge", "env": {"PATH": "`+notExec+string(filepath.ListSeparator)+other+string(filepath.ListSeparator)+bin+`"}},
		"notFound": {"command": "codebridge", "env": {"PATH": "`+filepath.Join(dir, "nowhere")+`"}},
		"relativeElsewhere": {"command": "./bin/codebridge", "cwd": "`+other+`"},
		"ordinary": {"command": "npx", "args": ["-y", "pkg"]}
	}}`)
	env := map[string]string{"PATH": notExec + string(filepath.ListSeparator) + bin}
	for _, self := range []string{exe, filepath.Join(bin, "codebridge")} {
		servers, problems := Load(Options{Home: home, Self: self, LookupEnv: lookupIn(env)})
		var got []string
		for _, s := range servers {
			got = append(got, s.Name)
		}
		want := []string{"otherProgram", "shadowed", "notFound", "relativeElsewhere", "ordinary"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Self %s: servers %q, want %q", self, got, want)
		}
		var wp []wantProblem
		for _, name := range []string{"viaEntryPATH", "viaProcessPATH", "absolute", "symlink", "relativeToCwd"} {
			wp = append(wp, wantProblem{File: "MCPs/a.json", Server: name, Field: "command", Is: ErrSelfReference,
				Contains: []string{"would launch codebridge itself"}})
		}
		checkProblems(t, home, problems, wp)
	}

	// Without Self, nothing is skipped.
	servers, problems := Load(Options{Home: home, LookupEnv: lookupIn(env)})
	if len(servers) != 10 || len(problems) != 0 {
		t.Errorf("without Self: %d servers, problems %v", len(servers), problems)
	}
}

func TestProblemError(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{File: "/h/MCPs/a.json", Server: "fs", Field: "args[1]", Err: errors.New("bad; fix it")},
			`discovery: /h/MCPs/a.json: server "fs": field "args[1]": bad; fix it`},
		{Problem{File: "/h/MCPs/a.json", Server: "fs", Err: errors.New("bad")},
			`discovery: /h/MCPs/a.json: server "fs": bad`},
		{Problem{File: "/h/MCPs/a.json", Field: "mcpServers", Err: errors.New("bad")},
			`discovery: /h/MCPs/a.json: field "mcpServers": bad`},
		{Problem{File: "a.json"}, `discovery: a.json: unknown problem`},
	}
	for _, tt := range tests {
		if got := tt.p.Error(); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
	var err error = Problem{Err: &kindError{"x", ErrDuplicate}}
	if !errors.Is(err, ErrDuplicate) || errors.Is(err, ErrSelfReference) {
		t.Errorf("errors.Is does not see through Problem")
	}
}

func TestDefaultHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CB_TEST_TOKEN", "tok")
	writeFile(t, filepath.Join(home, "MCPs/a.json"), `{"mcpServers": {"a": {"command": "a", "cwd": "~/x", "args": ["${CB_TEST_TOKEN}"]}}}`)
	servers, problems := Load(Options{})
	if len(problems) != 0 || len(servers) != 1 {
		t.Fatalf("servers %+v, problems %v", servers, problems)
	}
	if s := servers[0]; s.Cwd != filepath.Join(home, "x") || s.Args[0] != "tok" {
		t.Errorf("server %+v", s)
	}
}

func TestExpand(t *testing.T) {
	env := lookupIn(map[string]string{"A": "1", "B_2": "two", "E": "", "X": "${A}"})
	tests := []struct {
		in, want string
		missing  []string
	}{
		{"", "", nil},
		{"plain", "plain", nil},
		{"${A}", "1", nil},
		{"x${A}y${B_2}z", "x1ytwoz", nil},
		{"${X}", "${A}", nil}, // no recursive expansion
		{"${E:-d}", "", nil},  // set but empty keeps the empty value
		{"${U:-d}", "d", nil},
		{"${U:-}", "", nil},
		{"${U:-a:-b}", "a:-b", nil},
		{"${U:-${A}", "${A", nil}, // the default ends at the first }
		{"${U}", "${U}", []string{"U"}},
		{"${U}${V}${U}", "${U}${V}${U}", []string{"U", "V"}},
		{"$A $ {A} $(A) ${", "$A $ {A} $(A) ${", nil},
		{"${A", "${A", nil},
		{"${A:x}", "${A:x}", nil},
		{"${-A}", "${-A}", nil},
		{"${9}", "${9}", nil},
		{"${a_b}", "${a_b}", []string{"a_b"}},
		{"${${A}}", "${1}", nil},
		{"ünï ${A} côdé", "ünï 1 côdé", nil},
	}
	for _, tt := range tests {
		got, missing := expand(tt.in, env)
		if got != tt.want || !reflect.DeepEqual(missing, tt.missing) {
			t.Errorf("expand(%q) = %q, %q; want %q, %q", tt.in, got, missing, tt.want, tt.missing)
		}
	}
}

func checkProblems(t *testing.T, home string, got []Problem, want []wantProblem) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d:", len(got), len(want))
		for _, p := range got {
			t.Errorf("  %v", p)
		}
		return
	}
	for i, w := range want {
		p := got[i]
		msg := p.Error()
		if rel(t, home, p.File) != w.File || p.Server != w.Server || p.Field != w.Field {
			t.Errorf("problem %d: %s\n want file %q server %q field %q", i, msg, w.File, w.Server, w.Field)
		}
		if w.Is != nil && !errors.Is(p, w.Is) {
			t.Errorf("problem %d: %s\n is not %v", i, msg, w.Is)
		}
		if !strings.HasPrefix(msg, "discovery: "+p.File+": ") {
			t.Errorf("problem %d: %s\n does not start with the file", i, msg)
		}
		if !strings.Contains(msg, "; ") {
			t.Errorf("problem %d: %s\n does not say what to do", i, msg)
		}
		for _, c := range w.Contains {
			c = strings.ReplaceAll(c, "MCPs/", filepath.Join(home, "MCPs")+string(filepath.Separator))
			if !strings.Contains(msg, c) {
				t.Errorf("problem %d: %s\n does not contain %q", i, msg, c)
			}
		}
	}
}

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

func rel(t *testing.T, home, p string) string {
	t.Helper()
	r, err := filepath.Rel(home, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(r)
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	mkdir(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestPerSession(t *testing.T) {
	h := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(h, "MCPs"), 0o755))
	must(t, os.WriteFile(filepath.Join(h, "MCPs", "a.json"), []byte(`{"mcpServers": {
		"mine": {"command": "x", "per_session": true},
		"ours": {"command": "y"},
		"bad": {"command": "z", "per_session": "yes"}}}`), 0o644))
	servers, problems := Load(Options{Home: h, LookupEnv: func(string) (string, bool) { return "", false }})
	if len(servers) != 2 || !servers[0].PerSession || servers[1].PerSession {
		t.Fatalf("servers %+v", servers)
	}
	if len(problems) != 1 || problems[0].Server != "bad" || problems[0].Field != "per_session" {
		t.Fatalf("problems %v", problems)
	}
}

// must fails the test at once when a step of its set-up returned an error.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
