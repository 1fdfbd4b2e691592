package e2e

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// These tests install real packages from the package index (PyPI, or the
// index pip on this machine is configured for) through the host's pip;
// the sandbox itself never has a network.

// needPip skips (or, under CODEBRIDGE_E2E=1, fails) a test when the host
// has no pip to download wheels with.
func needPip(t *testing.T) {
	t.Helper()
	needEnv(t)
	if err := exec.Command("python3", "-m", "pip", "--version").Run(); err != nil {
		if os.Getenv("CODEBRIDGE_E2E") == "1" {
			t.Fatalf("on-demand installs need pip on the host (apt install python3-pip): %v", err)
		}
		t.Skipf("no pip on the host: %v", err)
	}
}

// packagesHome is a HOME whose config file has the given top-level keys
// besides an empty mcpServers.
func packagesHome(t *testing.T, keys map[string]any) string {
	t.Helper()
	h := home(t, nil)
	cfg := map[string]any{"mcpServers": map[string]any{}}
	for k, v := range keys {
		cfg[k] = v
	}
	data, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(h, "MCPs", "packages.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

// installAnswer reads the JSON a cell printed for runtime.install's result.
func installAnswer(t *testing.T, text string) map[string]any {
	t.Helper()
	line := text
	if i := strings.Index(text, "INSTALL "); i >= 0 {
		line = strings.SplitN(text[i+len("INSTALL "):], "\n", 2)[0]
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("no install result in:\n%s", text)
	}
	return got
}

// netWatch runs an install while a task lists the sandbox's network
// interfaces over and over; it prints the interfaces seen before, during
// and after, and the install's result.
const netWatch = `
import asyncio, json, os
def nics():
    return sorted(os.listdir("/sys/class/net"))
seen, during = {"before": nics()}, set()
async def watch(job):
    n = 0
    while not job.done():
        during.update(nics()); n += 1
        await asyncio.sleep(0.01)
    return n
job = asyncio.ensure_future(runtime.install(%s))
polls = await watch(job)
r = job.result()
seen["during"], seen["after"], seen["polls"] = sorted(during), nics(), polls
print("NICS", json.dumps(seen))
print("INSTALL", json.dumps(r))
`

// TestInstallPureAndCompiled: a pure-Python package and one with compiled
// extensions are installed on demand and used in the same interpreter; the
// sandbox has no interface but lo before, during and after; the same
// install again, in the same sandbox and in a new bridge, comes from the
// host's cache without a download.
func TestInstallPureAndCompiled(t *testing.T) {
	needPip(t)
	h := home(t, nil)
	b := startBridge(t, h)
	got := b.ok(strings.Replace(netWatch, "%s", `"tabulate==0.9.0", "numpy==2.2.6"`, 1), "timeout", 120)
	nics := sandboxNICs()
	mustContain(t, got, `NICS {"before": `+nics+`, "during": `+nics+`, "after": `+nics)
	first := installAnswer(t, got)
	if first["cached"] != false || first["downloaded"].(float64) < 1e6 {
		t.Fatalf("a first install must download numpy: %v", first)
	}
	mustContain(t, strings.Join(toStrings(first["installed"]), ","), "numpy 2.2.6", "tabulate 0.9.0")

	got = b.ok("import numpy as np, tabulate\nprint(tabulate.tabulate([[int(np.arange(10).sum()), np.__version__]]))")
	mustContain(t, got, "45  2.2.6")

	// Again in the same sandbox: from the cache, nothing sent.
	again := installAnswer(t, b.ok(`import json; print("INSTALL", json.dumps(runtime.install_sync("numpy==2.2.6", "tabulate==0.9.0")))`))
	if again["cached"] != true || again["downloaded"].(float64) != 0 || again["sent"].(float64) != 0 {
		t.Fatalf("the same install again must come from the cache and send nothing: %v", again)
	}
	b.close()

	// A new bridge with the same state: a new sandbox gets the wheels from
	// the cache, without pip.
	b2 := startBridge(t, h)
	third := installAnswer(t, b2.ok(`import json; print("INSTALL", json.dumps(await runtime.install("tabulate==0.9.0", "numpy==2.2.6")))`, "timeout", 120))
	if third["cached"] != true || third["downloaded"].(float64) != 0 || third["sent"].(float64) < 1e6 {
		t.Fatalf("a new sandbox must get the wheels from the host's cache: %v", third)
	}
	mustContain(t, b2.ok("import numpy; print(numpy.ones(3).sum())"), "3.0")
	if strings.Contains(b2.stderr.String(), "packages downloaded") {
		t.Fatalf("the second bridge ran pip:\n%s", b2.stderr)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestInstallMatplotlibChart: matplotlib installed on demand draws a chart
// that display() shows as image content.
func TestInstallMatplotlibChart(t *testing.T) {
	needPip(t)
	b := startBridge(t, home(t, nil))
	b.ok(`await runtime.install("matplotlib")`, "timeout", 180)
	r := b.run("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\ndisplay(plt)\nprint('drawn')", "timeout", 60)
	if r.isError || len(r.images) != 1 {
		t.Fatalf("want one image, got %d (error %v):\n%s", len(r.images), r.isError, r.text)
	}
	png := r.images[0].Data
	if dec, err := base64.StdEncoding.DecodeString(string(png)); err == nil {
		png = dec
	}
	if r.images[0].MIMEType != "image/png" || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Fatalf("not a PNG: %s %q", r.images[0].MIMEType, png[:min(8, len(png))])
	}
	mustContain(t, r.text, "drawn")
}

// TestInstallErrors: a name the allow-list refuses, a name the index does
// not have, a package with no wheel for the sandbox, a version conflict,
// a pip option smuggled in as a name, and a host without pip: each is a
// clear error, and the next cell works.
func TestInstallErrors(t *testing.T) {
	needPip(t)
	h := packagesHome(t, map[string]any{"allow_packages": []string{"numpy", "matplotlib", "docopt", "codebridge-no-such-*"}})
	b := startBridge(t, h)
	cases := []struct{ reqs, want string }{
		{`"requests"`, `the package "requests" is not allowed here`},
		{`"codebridge-no-such-package-7f3a"`, "the index has no package codebridge-no-such-package-7f3a"},
		{`"docopt"`, "docopt has no wheel for the sandbox's Python (CPython 3."},
		{`"numpy==2.2.6", "matplotlib==3.8.0"`, "conflict with each other or with their dependencies"},
		{`"--index-url=http://127.0.0.1:9/"`, "is not a package name"},
	}
	for _, c := range cases {
		r := b.run("await runtime.install("+c.reqs+")", "timeout", 120)
		if !r.isError {
			t.Fatalf("install(%s) succeeded:\n%s", c.reqs, r.text)
		}
		mustContain(t, r.text, "PackageError", c.want)
		mustContain(t, b.ok("print(6 * 7)"), "42")
	}
	b.close()

	nopip := startBridge(t, h, "CODEBRIDGE_PIP=/nonexistent/python3 -m pip")
	r := nopip.run(`runtime.install_sync("numpy")`)
	mustContain(t, r.text, "on-demand installs need pip on the host", "apt install python3-pip")
	mustContain(t, nopip.ok("print(6 * 7)"), "42")
}

// TestConfigPackages: packages named in the config are importable in the
// first cell; once cached, a new sandbox gets them with its start files,
// before its first cell, without asking the host again.
func TestConfigPackages(t *testing.T) {
	needPip(t)
	h := packagesHome(t, map[string]any{"packages": []string{"tabulate==0.9.0"}, "allow_packages": []string{"numpy"}})
	b := startBridge(t, h)
	mustContain(t, b.ok("import tabulate; print(tabulate.__version__)", "timeout", 120), "0.9.0")
	b.close()

	b2 := startBridge(t, h)
	mustContain(t, b2.ok("from mcp import _packages\nprint(_packages._pending, 'tabulate' in __import__('sys').modules)\nimport tabulate; print(tabulate.__version__)"),
		"[] False", "0.9.0")
	if log := b2.stderr.String(); strings.Contains(log, "packages downloaded") || strings.Contains(log, "packages from the cache") {
		t.Fatalf("the second sandbox asked for its configured packages instead of getting them at start:\n%s", log)
	}
}
