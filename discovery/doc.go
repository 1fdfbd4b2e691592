// Package discovery finds the upstream MCP servers that codebridge proxies.
//
// Servers are defined in JSON files in the "mcpServers" format that Claude
// Desktop, Claude Code and Cursor use:
//
//	{"mcpServers": {
//	  "fs": {"command": "npx",
//	         "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
//	         "env": {"K": "v"}, "cwd": "~/work", "description": "Files under /tmp"},
//	  "remote": {"url": "https://example.com/mcp",
//	             "headers": {"Authorization": "Bearer ${TOKEN}"}},
//	  "off": {"command": "x", "disabled": true}}}
//
// [Load] reads every *.json file in $HOME/MCPs in sorted name order, then the
// extra files it is given (codebridge's --config flags), and returns the
// servers in a deterministic order: file by file, and within a file in the
// order the entries are written. A name defined twice keeps its first
// definition.
//
// A mistake in one file or one entry never hides the rest: Load returns every
// server it could load together with a [Problem] for each thing it had to
// skip, and each Problem says which file, server and field is wrong and what
// to do about it.
//
// [Read] reads the same files once and returns everything they hold: the
// servers Load returns, the files' custom redaction patterns
// and package settings, and the problems of all of them
// in one list. A command reads its configuration with Read, once.
//
// Within an entry, ${VAR} and ${VAR:-default} are replaced from the
// environment in args, env values, header values, url and cwd. A bare $VAR is
// left as written. A cwd that starts with ~ is taken relative to the home
// directory. Relative paths in command and cwd are left as written: they are
// relative to the directory codebridge runs in, as with other MCP clients.
//
// "timeout" is the time limit of one tool call to the server, in seconds.
// Fields other clients add, such as "autoApprove", are ignored. A "type" field is checked against the entry: "stdio" needs a command, and
// "http" or "streamable-http" a url; "sse" is refused, since codebridge
// speaks only streamable HTTP to remote servers.
//
// An entry that would launch the running codebridge executable itself is
// skipped, so that a configuration shared with other clients cannot make
// codebridge start copies of itself.
package discovery
