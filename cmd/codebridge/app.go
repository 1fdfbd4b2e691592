package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/codebridge/codebridge/bridge"
	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/gate"
	"github.com/codebridge/codebridge/metrics"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/codebridge/codebridge/shapes"
	"github.com/codebridge/codebridge/skills"
	"github.com/codebridge/codebridge/upstream"
)

// app is codebridge wired together: the configured servers, their pool,
// the engine, the sandbox session and the bridge over them. serve, exec,
// doctor and the listing commands all start from one.
type app struct {
	settings  *settings
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
func newApp(s *settings, stderr io.Writer, plan *runPlan) *app {
	opts := s.bridgeOptions()
	// The MCP sessions the bridge will serve come first: the log (its
	// warnings reach the client's log too), the pool (what the upstreams
	// ask of their client) and the bridge are made from them.
	opts.Clients = bridge.NewClients(opts)
	log := slog.New(slog.NewMultiHandler(newLogger(stderr, s).Handler(), bridge.NewClientLog(opts.Clients)))
	slog.SetDefault(log)
	self, _ := os.Executable()
	// The one reading of the config files: servers, redaction patterns
	// and package settings, and their problems, all from it.
	cfg := discovery.Read(discovery.Options{Home: s.home, Files: s.configs, Self: self})
	a := &app{settings: s, log: log, specs: cfg.Servers, problems: cfg.Problems}
	a.sandboxes = sandbox.NewManager(s.engineOptions(log))
	poolOpts := s.upstreamOptions(log)
	poolOpts.Downstream = opts.Clients.Downstream()
	poolOpts.Catalogue = upstream.OpenCatalogue(s.dir(), log)
	a.pool = upstream.NewPool(cfg.Servers, poolOpts)
	if plan != nil {
		a.gate, a.gateClose, a.gateErr = newGate(s, cfg, log)
	}
	if s.httpAddr != "" {
		a.metrics = metrics.New()
	}
	sandboxCfg := s.sandboxConfig(plan, a.chooseImage)
	sandboxCfg.Log = log
	opts.Log, opts.Gate, opts.Metrics = log, a.gate, a.metrics
	if plan != nil {
		opts.WorkspaceOf = plan.workspaceOf
	}
	opts.Packages = a.packagesFor(s, cfg.Packages)
	opts.Skills = skills.Open(s.dir())
	opts.Shapes = shapes.Open(s.dir(), log)
	a.bridge = bridge.New(a.sandboxes, sandboxCfg, a.pool, opts)
	return a
}

// sandboxConfig is the sandbox's configuration: the sandbox and run
// settings, and the plan's workspace, mounts and user when there is one.
func (s *settings) sandboxConfig(plan *runPlan, choose func(context.Context, sandbox.Engine) (string, error)) sandbox.Config {
	cfg := sandbox.Config{Image: s.image, ChooseImage: choose, User: s.user, Limits: s.limits, Channel: s.channel, OutputLimit: s.outputLimit}
	if plan != nil {
		cfg.User, cfg.Workspace, cfg.Mounts = plan.user, plan.workspace, plan.mounts
	}
	return cfg
}

// bridgeOptions are the bridge's options the settings make; newApp adds
// what it builds (log, gate, packages, skills, metrics).
func (s *settings) bridgeOptions() bridge.Options {
	return bridge.Options{
		DefaultTimeout: s.timeout,
		MaxTimeout:     s.maxTimeout,
		Output:         s.output,
		Version:        version(),
		Roots:          s.roots,
		PerSession:     s.httpAddr != "",
		Warm:           s.warm,
	}
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
