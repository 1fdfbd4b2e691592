package main

import (
	"fmt"
	"regexp"
	"strings"
)

// clientVar matches a ${...} reference in a client's config.
var clientVar = regexp.MustCompile(`\$\{([^}]*)\}`)

// ownVar matches what codebridge expands itself: ${NAME} and
// ${NAME:-default}.
var ownVar = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(:-.*)?$`)

// editorVars are the predefined variables of VS Code and Cursor, with
// codebridge's spelling where there is one (empty where there is none).
var editorVars = map[string]string{
	"userHome": "${HOME}", "pathSeparator": "/", "/": "/",
	"workspaceFolder": "", "workspaceFolderBasename": "", "file": "", "fileWorkspaceFolder": "",
	"relativeFile": "", "relativeFileDirname": "", "fileBasename": "", "fileBasenameNoExtension": "",
	"fileExtname": "", "fileDirname": "", "fileDirnameBasename": "", "cwd": "", "lineNumber": "",
	"selectedText": "", "execPath": "", "defaultBuildTask": "",
}

// translateVar returns codebridge's spelling of a client's variable
// reference (the text between "${" and "}"), or false when there is none.
func translateVar(client, ref string) (string, bool) {
	if client == "vscode" || client == "cursor" {
		if out, ok := editorVars[ref]; ok {
			return out, out != ""
		}
	}
	switch {
	case ownVar.MatchString(ref):
		return "${" + ref + "}", true
	case strings.HasPrefix(ref, "env:") && ownVar.MatchString(strings.TrimPrefix(ref, "env:")):
		return "${" + strings.TrimPrefix(ref, "env:") + "}", true
	}
	return "", false
}

// unsetHere is a note about a translated reference (codebridge's
// spelling) to a variable that has no default and is not set in this
// environment, or "": codebridge would skip the server until it is set.
func unsetHere(ref string, set func(string) bool) string {
	name := strings.TrimSuffix(strings.TrimPrefix(ref, "${"), "}")
	if strings.Contains(name, ":-") || set == nil || set(name) {
		return ""
	}
	return fmt.Sprintf("%s is not set here: set it in the environment codebridge starts in, or codebridge skips this server", name)
}

// translateVars rewrites, in place, the variable references in every
// string field of an entry into codebridge's syntax. It returns a note per
// translated reference, and per variable without a default that set says
// is not set here, or an error naming the first reference that has no
// translation (such as VS Code's ${input:x}, which VS Code asks the user for).
func translateVars(e map[string]any, client string, set func(string) bool) ([]string, error) {
	var notes []string
	var bad string
	unset := map[string]bool{}
	tr := func(s string) string {
		return clientVar.ReplaceAllStringFunc(s, func(m string) string {
			ref := m[2 : len(m)-1]
			out, ok := translateVar(client, ref)
			if !ok {
				if bad == "" {
					bad = m
				}
				return m
			}
			if out != m {
				notes = append(notes, fmt.Sprintf("%s became %s", m, out))
			}
			if note := unsetHere(out, set); note != "" && strings.HasPrefix(out, "${") && !unset[out] {
				unset[out] = true
				notes = append(notes, note)
			}
			return out
		})
	}
	for k, v := range e {
		if k == "description" {
			continue
		}
		e[k] = mapStrings(v, tr)
	}
	if bad != "" {
		return nil, fmt.Errorf("it uses %s, which %s fills in itself and codebridge cannot; add it to ~/MCPs by hand with the value, or with ${VAR} to take it from the environment", bad, client)
	}
	return notes, nil
}

// mapStrings applies f to every string in a decoded JSON value.
func mapStrings(v any, f func(string) string) any {
	switch t := v.(type) {
	case string:
		return f(t)
	case []any:
		for i := range t {
			t[i] = mapStrings(t[i], f)
		}
	case map[string]any:
		for k := range t {
			t[k] = mapStrings(t[k], f)
		}
	}
	return v
}
