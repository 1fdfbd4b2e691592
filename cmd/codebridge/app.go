package main

import (
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/codebridge/codebridge/bridge"
	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/metrics"
	"github.com/codebridge/codebridge/internal/shapes"
	"github.com/codebridge/codebridge/internal/skills"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/codebridge/codebridge/sandbox"
)

// app is codebridge wired together: the configured servers, their pool,
// the engine, the sandbox session and the bridge over them. serve, exec,
// doctor and the listing commands all start from one.
type app struct {
	sandbox   sandboxFlags // the sandbox's settings, for doctor's checks and the image's choice
	log       *slog.Logger
	specs     []discovery.Server
	problems  []discovery.Problem
	sandboxes *sandbox.Manager
	pool      *upstream.Pool
	bridge    *bridge.Bridge
	gate      *gate.Gate // nil unless the command runs code (newApp's plan)
	gateClose func()
	gateErr   error            // the gate could not be built: the command must not run code
	metrics   *metrics.Metrics // serving HTTP only
}

// newApp wires codebridge from the settings. plan is the workspace and
// user of a command that runs the model's code (serve, exec), which gets
// the gate; nil for the others, whose sandbox (doctor's probe) is
// ephemeral, unmounted and ungated.
func newApp(s *appSettings, stderr io.Writer, plan *runPlan) *app {
	opts := bridgeOptions(s.Run, s.Upstream, s.HTTP)
	self, _ := os.Executable()
	// The one reading of the config files: servers, redaction patterns
	// and package settings, and their problems, all from it.
	cfg := discovery.Read(discovery.Options{Home: s.Upstream.home, Files: s.Upstream.Configs, Self: self})
	a := &app{sandbox: s.Sandbox, specs: cfg.Servers, problems: cfg.Problems}
	if plan != nil {
		// The gate comes before the clients, which redact what the client
		// reads with it. It logs through slog.Default(), the log made
		// below from those clients: each is made of the other.
		a.gate, a.gateClose, a.gateErr = newGate(s.Gate, s.State, cfg)
	}
	opts.Gate = a.gate
	// The MCP sessions the bridge will serve come next: the log (its
	// warnings reach the client's log too), the pool (what the upstreams
	// ask of their client) and the bridge are made from them.
	opts.Clients = bridge.NewClients(opts)
	log := slog.New(slog.NewMultiHandler(newLogger(stderr, s.Log).Handler(), bridge.NewClientLog(opts.Clients)))
	slog.SetDefault(log)
	a.log = log
	a.sandboxes = sandbox.NewManager(s.Sandbox.engineOptions(log, s.Workspace.persistent()))
	poolOpts := s.Upstream.upstreamOptions(log)
	poolOpts.Downstream = opts.Clients.Downstream()
	poolOpts.Catalogue = upstream.OpenCatalogue(s.State.dir(), log)
	a.pool = upstream.NewPool(cfg.Servers, poolOpts)
	if s.HTTP.Addr != "" {
		a.metrics = metrics.New()
	}
	sandboxCfg := sandboxConfig(s.Sandbox, s.Run, plan)
	sandboxCfg.ChooseImage, sandboxCfg.Log = a.chooseImage, log
	opts.Log, opts.Metrics = log, a.metrics
	if plan != nil {
		opts.WorkspaceOf = plan.workspaceOf
	}
	opts.Packages = a.packagesFor(s.State, s.Sandbox.Pip, cfg.Packages)
	opts.Skills = skills.Open(s.State.dir())
	opts.Shapes = shapes.Open(s.State.dir(), log)
	a.bridge = bridge.New(a.sandboxes, sandboxCfg, a.pool, opts)
	return a
}

// logProblems reports configuration problems on the log.
func (a *app) logProblems() {
	for _, p := range a.problems {
		a.log.Warn(p.Error())
	}
}

// close stops the sandbox, the upstreams and the engine, giving up after
// a minute (sandbox.RemoveTimeout and a little) so that a stuck engine cannot
// keep the process alive.
func (a *app) close() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := make(chan struct{}, 2)
		go func() { _ = a.bridge.Close(); c <- struct{}{} }()
		go func() { _ = a.pool.Close(); c <- struct{}{} }()
		<-c
		<-c
		_ = a.sandboxes.Close()
		if a.gateClose != nil {
			a.gateClose() // after the last call: the audit log and spans are complete
		}
	}()
	select {
	case <-done:
	case <-time.After(sandbox.RemoveTimeout + 5*time.Second):
		a.log.Error("shutdown took too long; exiting anyway (a later codebridge removes containers left behind)")
	}
}
