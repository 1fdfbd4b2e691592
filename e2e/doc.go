// Package e2e holds codebridge's end-to-end tests: a real MCP client (the
// go-sdk) drives the built codebridge binary over stdio; the binary runs a
// real container engine and real upstream MCP servers (the stub in
// testdata/servers and the npm reference servers in testdata/npm).
//
// They need an engine and the sandbox image (CODEBRIDGE_TEST_IMAGE, default
// localhost/codebridge-python:bookworm, built by `make image`).
// When CODEBRIDGE_E2E=1 (CI sets it) a missing engine or image fails the
// run; otherwise the tests skip with the reason.
package e2e
