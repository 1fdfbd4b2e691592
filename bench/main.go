// Command bench measures codebridge on this machine and writes the results
// table to BENCHMARKS.md. It is what `make bench` runs:
//
//	CODEBRIDGE_IMAGE=localhost/codebridge-python:bookworm go run ./bench -out BENCHMARKS.md
//
// It builds ./cmd/codebridge into a temporary directory and drives the
// binary the way an agent's MCP client does: a go-sdk client over stdio,
// with HOME pointed at an empty directory and the upstreams given with
// --config. Every comparison is made against the same upstream server
// reached "directly": a go-sdk client wired straight to it. It needs the
// sandbox image, a container engine and the npm reference servers
// (npm ci --prefix testdata/npm). The whole run takes about a minute.
//
// What it measures:
//
//   - Context cost. Tokens (o200k_base, counted with tiktoken-go and its
//     offline BPE loader; only this command imports them) of codebridge's
//     tools/list (the tools array as compact JSON) against the combined
//     tools/list of the same upstreams wired in directly: (a) the three npm
//     reference servers, (b) a generated catalogue of 1,000 tools with
//     realistic schemas, served by this program itself (`bench
//     serve-catalogue`, see catalogue.go). The run_python definition must
//     be byte-for-byte the same in both cases.
//
//   - Task cost. One scripted task done both ways against the real
//     filesystem and memory servers: list a directory of 200 generated
//     files, read each, count its TODO lines, and store the counts with
//     create_entities. Direct style counts what passes through the model:
//     the two servers' tool schemas (once) plus every call's name and
//     arguments and every result's content blocks, as JSON, from calls
//     really made with a go-sdk client. Code style counts the run_python
//     definition plus, for a discovery call (help() on the three tools) and
//     the one call that does the task, the code sent and the text that
//     came back. Both runs are checked against the expected counts in the
//     memory server's file.
//
//   - Latency. Cold start: from launching the bridge process to the first
//     run_python result (a container is created and booted on the way; the
//     image is present). Warm run_python of print(1), timed by the client.
//     A proxied call (the everything server's echo) timed inside Python
//     with perf_counter_ns, against the same call timed by a direct go-sdk
//     client to another instance of the same server, and beside it a
//     request the bridge answers itself (runtime.list_servers), the
//     sandbox-host round trip inside every proxied call. 1,000 proxied calls
//     sequential and with asyncio.gather, in calls per second, beside the
//     direct client's rate with 1,000 calls from as many goroutines.
//
//   - Data. A 64 MiB tool result into Python (the stub server's big tool;
//     Python prints only its length) and a 64 MiB print out of Python: the
//     run_python time and the bridge's peak RSS during the call (VmHWM of
//     the codebridge process, reset through /proc/<pid>/clear_refs before
//     each call). "Bounded" is read as: at most the idle RSS plus twice
//     the payload. A transfer codebridge fails is reported as a missed
//     target (and a 15 MiB result is measured beside it), not as a bench
//     failure; the bench fails only when it cannot measure.
//
//   - Idle. The bridge's VmRSS with a warm sandbox and its three npm
//     upstreams warm (each called once), two seconds after the last call.
//     With -bridge-tags kubernetes (and -only idle) the bridge is built
//     with the Kubernetes engine, which it does not use: what compiling
//     the engine in costs every bridge.
//
//   - First search. The first search of a new bridge over 70 configured
//     servers none of which runs (searchcold.go), timed inside Python:
//     over an empty state directory (the search starts every server to
//     list it) and over the one an earlier bridge left (it answers from
//     the listings kept there, and starts none).
//
//   - Search (search.go; in this process, so `-only search` needs no
//     engine, image or npm servers). R@1, R@5 and MRR of codebridge's
//     ranking (upstream.Rank) on mcpproxy-go's golden set and on BFCL v4
//     live multiple among every v4 function (testdata/search), beside a
//     plain BM25 on the same catalogue and queries and mcpproxy-go's
//     committed BM25; latency p50/p99 at 2,931 tools for short and long
//     queries; indexing 2,931 new tools. -search-ablation adds what each
//     part of the ranking is worth, and prints queries still ranked wrong.
//
//   - Profiles (-profile DIR, with -only latency; not in the report). The
//     bridge is built with its profiling hook (-tags benchprofile) and each
//     latency loop runs in a window of CPU and allocation profiles; the
//     bridge's CPU time per window (/proc) goes to DIR/windows.txt, the
//     runtime's CPU per call and cProfile of the proxied loops to
//     DIR/python-*.txt (profile.go; docs/ARCHITECTURE.md reads them).
//
//   - Kubernetes (-engine kubernetes, built with -tags kubernetes: `make
//     bench-kube`; not in CI). The bridges it starts use the cluster of
//     KUBECONFIG, and it runs only what a cluster changes: cold start,
//     latency and throughput, serving HTTP, and how many idle sessions a
//     node holds (kube.go): -idle-sessions (40) sessions that each ran
//     print(1), their Pods' memory read from the kubelet's stats summary
//     through the API server (or, where it will not proxy to the node,
//     from their memory cgroups on this machine), and the node's capacity
//     as the least of its max Pods, its allocatable memory over each Pod's
//     request (what the scheduler counts) and over each idle Pod's working
//     set; and a line's round trip over pods/attach and over pods/exec
//     side by side, to one echo Pod (the frames' channel was the first
//     and is the second); and fork() where the runtime is not pid 1,
//     its first fork (the handover that makes the init) and later ones
//     (fork.go). Every Pod it made is removed, and one left is an error.
//
// Each figure is a median over repeated runs with its min–max spread;
// per-call latencies are summarised per run (median, p99) and the median
// of the runs is shown. Targets are the design's, as docs/performance.md lists them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// env is what every measurement needs.
type env struct {
	repo  string // the module root
	tmp   string // scratch directory, removed at the end
	home  string // the empty HOME the bridges run with
	bin   string // the codebridge binary built for this run
	self  string // this program, which also serves the catalogue
	image string
	tok   *tokenizer

	runs, calls, coldRuns, dataRuns int

	profile string // where the latency section's bridge writes its profiles; "": none (profile.go)

	searchAblation bool // the search section also measures what each part of the ranking is worth (search.go)

	kube         bool // -engine kubernetes: the sections that measure a cluster (kube.go)
	idleSessions int  // how many idle sessions the node measurement starts
	leftPods     int  // sandbox Pods the node measurement found left behind (and deleted)

	extraTags []string // -bridge-tags: build tags the bridge is built with besides those above

	engineName, python, loadAtStart string // for the report
}

// bridgeTags are the build tags of the bridge this run measures: its
// profiling hook (cmd/codebridge/benchprofile.go) with -profile, the
// Kubernetes engine with -engine kubernetes, and those of -bridge-tags.
func (e *env) bridgeTags() []string {
	var tags []string
	if e.profile != "" {
		tags = append(tags, "benchprofile")
	}
	if e.kube {
		tags = append(tags, "kubernetes")
	}
	return append(tags, e.extraTags...)
}

func (e *env) path(name string) string { return filepath.Join(e.tmp, name) }

func main() {
	if len(os.Args) > 1 && os.Args[1] == catalogueCommand {
		if err := serveCatalogue(); err != nil {
			fmt.Fprintln(os.Stderr, "catalogue:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	defImage := os.Getenv("CODEBRIDGE_IMAGE")
	if defImage == "" {
		defImage = "localhost/codebridge-python:bookworm"
	}
	e := &env{}
	out := flag.String("out", "", "also write the report to this `file` (e.g. BENCHMARKS.md)")
	flag.StringVar(&e.image, "image", defImage, "sandbox image (CODEBRIDGE_IMAGE)")
	flag.IntVar(&e.runs, "runs", 5, "repetitions of each latency and throughput measurement")
	flag.IntVar(&e.calls, "calls", 1000, "calls per latency run and per batch")
	flag.IntVar(&e.coldRuns, "cold", 5, "cold starts (each also gives an idle RSS)")
	flag.IntVar(&e.dataRuns, "data-runs", 5, "repetitions of each 64 MiB transfer")
	flag.StringVar(&e.profile, "profile", "", "build the bridge with its profiling hook and write CPU and allocation profiles of the latency section's loops to this `dir` (profile.go)")
	flag.BoolVar(&e.searchAblation, "search-ablation", false, "the search section also switches each part of the ranking off in turn, and prints ten queries of each set still ranked wrong (search.go)")
	only := flag.String("only", "", "run only the measurements whose name contains this (e.g. gate); the report is then not written")
	budget := flag.Duration("budget", 9*time.Minute+30*time.Second, "give up after this long")
	engine := flag.String("engine", os.Getenv("CODEBRIDGE_ENGINE"), "the engine the bridges use; kubernetes (with go run -tags kubernetes) measures the cluster of KUBECONFIG instead: "+
		"cold and warm first results, a proxied call, and how many idle sessions a node holds (make bench-kube)")
	// 40: enough for a steady per-Pod figure, few enough for a two-core lab node.
	flag.IntVar(&e.idleSessions, "idle-sessions", 40, "idle sessions the node measurement starts (-engine kubernetes)")
	flag.Func("bridge-tags", "build the bridge with these `tags` too, comma-separated (e.g. kubernetes: what the engine compiled in costs a bridge that uses another)", func(s string) error {
		e.extraTags = strings.Split(s, ",")
		return nil
	})
	flag.Parse()
	if err := e.setEngine(*engine); err != nil {
		return err
	}

	began := time.Now()
	e.loadAtStart = loadAverage()
	ctx, cancel := context.WithTimeout(context.Background(), *budget)
	defer cancel()

	var err error
	if e.repo, err = moduleRoot(); err != nil {
		return err
	}
	if e.self, err = os.Executable(); err != nil {
		return err
	}
	if e.tmp, err = os.MkdirTemp("", "codebridge-bench-"); err != nil {
		return err
	}
	defer os.RemoveAll(e.tmp)
	e.home = e.path("home")
	if err := os.MkdirAll(filepath.Join(e.home, "MCPs"), 0o755); err != nil {
		return err
	}
	sections := selected(e.sections(), *only)
	if needsBridge(sections) {
		if err := e.prepare(ctx); err != nil {
			return err
		}
	}
	var rows []row
	failed := 0
	for _, s := range sections {
		progress(s.name)
		t := time.Now()
		r, err := s.measure(ctx)
		if err != nil {
			failed++
			fmt.Fprintf(os.Stderr, "bench: %s: %v\n", s.name, err)
			r = []row{{name: s.name, failed: err.Error()}}
		}
		rows = append(rows, r...)
		progress(fmt.Sprintf("%s took %s", s.name, time.Since(t).Round(100*time.Millisecond)))
	}

	report := markdown(describeMachine(ctx, e), rows, time.Since(began), e)
	fmt.Print("\n" + report)
	if e.leftPods != 0 {
		return fmt.Errorf("%d sandbox Pods were left after the bridge stopped (deleted now), or they could not be listed", e.leftPods)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d measurements failed; %s not written", failed, len(sections), *out)
	}
	if *out != "" && *only == "" {
		if err := os.WriteFile(*out, []byte(report), 0o644); err != nil {
			return err
		}
		progress("wrote " + *out)
	}
	return nil
}

// prepare checks what the bridge's measurements need and builds the
// bridge.
func (e *env) prepare(ctx context.Context) error {
	if _, err := os.Stat(e.everything().Command); err != nil {
		return errors.New("the npm reference servers are not installed: run `npm ci --prefix testdata/npm`")
	}
	if err := e.checkEngine(ctx); err != nil {
		return err
	}
	var err error
	if e.tok, err = newTokenizer(); err != nil {
		return err
	}
	progress("building codebridge")
	e.bin, err = buildBridge(ctx, e.repo, e.tmp, e.bridgeTags())
	return err
}

// selected returns the sections whose name contains only ("": all).
func selected(all []section, only string) []section {
	var out []section
	for _, s := range all {
		if only == "" || strings.Contains(s.name, only) {
			out = append(out, s)
		}
	}
	return out
}

// needsBridge reports whether any of sections runs a bridge.
func needsBridge(sections []section) bool {
	for _, s := range sections {
		if !s.inProcess {
			return true
		}
	}
	return false
}

// setEngine takes -engine: with kubernetes, the bridges the bench starts
// inherit an environment that makes sandboxes Pods, each session's
// workspace its own emptyDir (no claims).
func (e *env) setEngine(engine string) error {
	if e.kube = engine == "kubernetes"; !e.kube {
		return nil
	}
	if !kubeBuilt {
		return errors.New("-engine kubernetes needs the build tag: go run -tags kubernetes ./bench -engine kubernetes (make bench-kube)")
	}
	os.Setenv("CODEBRIDGE_ENGINE", "kubernetes")
	os.Setenv("CODEBRIDGE_WORKSPACE", "ephemeral")
	return nil
}

// sections are the measurements of this run: all of them, or on
// Kubernetes what a cluster changes (the sandbox's start, its channel
// through the API server, the node it packs).
func (e *env) sections() []section {
	if e.kube {
		return []section{
			{name: "cold start and idle RSS", measure: e.measureColdAndIdle},
			{name: "latency and throughput", measure: e.measureLatency},
			{name: "serving HTTP", measure: e.measureHTTP},
			{name: "idle sessions per node", measure: e.measureKubeNode},
			{name: "the frames' channel: attach and exec", measure: e.measureKubeChannels},
			{name: "replicas", measure: e.measureReplicas}, // replicas.go
			{name: "fork", measure: e.measureKubeFork},     // fork.go
		}
	}
	return []section{
		{name: "context cost", measure: e.measureContext},
		{name: "cold start and idle RSS", measure: e.measureColdAndIdle},
		{name: "latency and throughput", measure: e.measureLatency},
		{name: "the gate's cost", measure: e.measureGate},
		{name: "task cost", measure: e.measureTask},
		{name: "64 MiB transfers", measure: e.measureData},
		{name: "serving HTTP", measure: e.measureHTTP},
		{name: "search", measure: e.measureSearch, inProcess: true},
		{name: "first search of a new bridge", measure: e.measureSearchCold}, // searchcold.go
		{name: "rewind", measure: e.measureRewind},                           // rewind.go
		{name: "replicas", measure: e.measureReplicas},                       // replicas.go
	}
}

// section is one measurement of the report.
type section struct {
	name    string
	measure func(context.Context) ([]row, error)
	// inProcess is true for a measurement made in this process, which
	// needs no bridge, engine or npm servers (`-only search` runs alone).
	inProcess bool
}

// moduleRoot finds the directory of go.mod from the working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run the bench from inside the codebridge module")
		}
		dir = parent
	}
}

func progress(msg string) {
	fmt.Fprintf(os.Stderr, "bench %s: %s\n", time.Now().Format("15:04:05"), msg)
}
