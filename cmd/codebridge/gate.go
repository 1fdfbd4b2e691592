package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/gate"
	"github.com/codebridge/codebridge/internal/statedir"
)

// gateSettings are the settings of the gate (policy, approval, audit,
// redaction); serve and exec take them.
type gateSettings struct {
	on              bool // the command runs code: build the gate
	policy          gate.Mode
	audit           string // a file, "off", or "" for the state directory's
	auditArgs       bool
	redact          []string
	approvalTimeout time.Duration
}

// gateKnobs are the gate's settings.
var gateKnobs = []string{"policy", "audit", "audit-args", "redact", "approval-timeout"}

// auditOff is the --audit value that turns the audit log off.
const auditOff = "off"

// newGate builds the gate from the settings and the config: the servers'
// "tools", "resources" and "prompts" rules, the values of their env and
// headers (always hidden from the model), their "redact": {"restore":
// false}, the config files' "redact" patterns, the audit log and, when
// OTEL_EXPORTER_OTLP_* asks for it, trace export. close flushes and closes.
// A file's "redact" patterns that cannot be used are an error: running
// code without them would show the model what they were to hide.
func newGate(s *settings, cfg discovery.Config, log *slog.Logger) (g *gate.Gate, closeFn func(), err error) {
	for _, p := range cfg.Problems {
		if errors.Is(p, discovery.ErrRedactPatterns) {
			return nil, nil, p
		}
	}
	policy := gate.Policy{Mode: s.gate.policy, Servers: map[string]gate.Rules{}}
	var secrets []gate.Secret
	keep := map[string]bool{}
	for _, sp := range cfg.Servers {
		keep[sp.Name] = sp.KeepTokens
		if !sp.Policy.Empty() {
			policy.Servers[sp.Name] = sp.Policy
		}
		for k, v := range sp.Env {
			secrets = append(secrets, gate.Secret{Name: sp.Name + ".env." + k, Value: v})
		}
		for k, v := range sp.Headers {
			secrets = append(secrets, gate.Secret{Name: sp.Name + ".headers." + k, Value: v})
		}
	}
	redactor, err := gate.NewRedactor(s.gate.redact, cfg.Patterns, secrets)
	if err != nil {
		return nil, nil, err
	}
	gcfg := gate.Config{Policy: policy, Redactor: redactor, KeepTokens: keep, ApprovalTimeout: s.gate.approvalTimeout, Log: log}
	if gcfg.Audit, err = openAudit(s); err != nil {
		return nil, nil, err
	}
	if gcfg.Tracing, err = gate.NewTracing(context.Background(), os.Getenv, version()); err != nil {
		return nil, nil, err
	}
	return gate.New(gcfg), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := gcfg.Tracing.Shutdown(ctx); err != nil {
			log.Warn("sending the last spans failed", "err", err)
		}
		if gcfg.Audit != nil {
			_ = gcfg.Audit.Close()
		}
	}, nil
}

// auditPath is the audit log's file ("" when it is off).
func auditPath(s *settings) (string, error) {
	switch s.gate.audit {
	case auditOff:
		return "", nil
	case "":
		return statedir.Dir(s.stateDir).EnsureParent(statedir.Audit)
	}
	return s.gate.audit, nil
}

func openAudit(s *settings) (*gate.AuditLog, error) {
	path, err := auditPath(s)
	if path == "" || err != nil {
		return nil, err
	}
	return gate.OpenAudit(path, s.gate.auditArgs)
}

// parseRedact reads --redact: kinds separated by commas.
func parseRedact(v string) ([]string, error) {
	kinds := strings.Split(v, ",")
	if _, err := gate.NewRedactor(kinds, nil, nil); err != nil {
		return nil, err
	}
	return kinds, nil
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off", "":
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", v)
}
