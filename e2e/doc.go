// Package e2e holds codebridge's end-to-end tests: a real MCP client (the
// go-sdk) drives the built codebridge binary over stdio; the binary runs a
// real container engine and real upstream MCP servers (the stub in
// testdata/servers and the npm reference servers in testdata/npm).
//
// They need an engine and the sandbox image (CODEBRIDGE_TEST_IMAGE, default
// localhost/codebridge-python:bookworm, built by `make image`).
// When CODEBRIDGE_E2E=1 (CI sets it) a missing engine or image fails the
// run; otherwise the tests skip with the reason. CODEBRIDGE_ENGINE picks
// the engine as it does for codebridge; CODEBRIDGE_BIN (a prebuilt binary)
// and CODEBRIDGE_REPO (a readable copy of the repository) let CI run the
// compiled tests as an unprivileged user, for rootless Podman.
package e2e
