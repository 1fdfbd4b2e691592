package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/statedir"
)

// gateFlags are the settings of the gate (policy, approval, audit,
// redaction); serve and exec take them.
type gateFlags struct {
	Policy gate.Mode `flag:"policy" env:"CODEBRIDGE_POLICY" default:"{gate.Open}" type:"mode" parse:"policy" usage:"what sandbox code may call by default, from the tools' annotations: open (everything), ask-destructive (ask the user before tools not marked read-only or non-destructive), read-only (only tools marked read-only); a server's \"tools\" rules come first"`
	// Audit is a file, "off", or "" for the state directory's.
	Audit           string        `flag:"audit" env:"CODEBRIDGE_AUDIT" type:"file" usage:"the audit log (JSON Lines) of every tool call and run_python; default audit.jsonl in the state directory; off turns it off"`
	AuditArgs       bool          `flag:"audit-args" env:"CODEBRIDGE_AUDIT_ARGS" default:"false" type:"bool" usage:"keep tool arguments in the audit log (as the sandbox wrote them, tokens and all), not only their size and SHA-256"`
	Redact          []string      `flag:"redact" env:"CODEBRIDGE_REDACT" type:"kinds" parse:"redact" usage:"personal data the model sees only as tokens (<email_1>): comma-separated email, phone, card, ssn, ip, iban, or all; custom patterns go in the config's \"redact\""`
	ApprovalTimeout time.Duration `flag:"approval-timeout" env:"CODEBRIDGE_APPROVAL_TIMEOUT" default:"{gate.DefaultApprovalTimeout}" type:"seconds" usage:"how long a call that needs the user's approval waits for the answer (then it is denied)"`
}

// complete checks the gate's settings with the gate's own words.
func (g *gateFlags) complete(func(string) string) error { return g.config().Validate() }

// config is the gate's configuration these settings make; newGate adds
// what the config files say.
func (g gateFlags) config() gate.Config {
	return gate.Config{Policy: gate.Policy{Mode: g.Policy}, ApprovalTimeout: g.ApprovalTimeout}
}

// auditOff is the --audit value that turns the audit log off.
const auditOff = "off"

// newGate builds the gate from the settings and the config: the servers'
// "tools", "resources" and "prompts" rules, the values of their env and
// headers (always hidden from the model), their "redact": {"restore":
// false}, the config files' "redact" patterns, the audit log and, when
// OTEL_EXPORTER_OTLP_* asks for it, trace export. close flushes and closes.
// A file's "redact" patterns that cannot be used are an error: running
// code without them would show the model what they were to hide.
// The gate logs through slog.Default() (see [gate.Config]).
func newGate(g gateFlags, st stateFlags, cfg discovery.Config) (_ *gate.Gate, closeFn func(), err error) {
	for _, p := range cfg.Problems {
		if errors.Is(p, discovery.ErrRedactPatterns) {
			return nil, nil, p
		}
	}
	gcfg := g.config()
	gcfg.Policy.Servers = map[string]gate.Rules{}
	var secrets []gate.Secret
	keep := map[string]bool{}
	for _, sp := range cfg.Servers {
		keep[sp.Name] = sp.KeepTokens
		if !sp.Policy.Empty() {
			gcfg.Policy.Servers[sp.Name] = sp.Policy
		}
		for k, v := range sp.Env {
			secrets = append(secrets, gate.Secret{Name: sp.Name + ".env." + k, Value: v})
		}
		for k, v := range sp.Headers {
			secrets = append(secrets, gate.Secret{Name: sp.Name + ".headers." + k, Value: v})
		}
	}
	redactor, err := gate.NewRedactor(g.Redact, cfg.Patterns, secrets)
	if err != nil {
		return nil, nil, err
	}
	gcfg.Redactor, gcfg.KeepTokens = redactor, keep
	if err = gcfg.Validate(); err != nil {
		return nil, nil, err
	}
	if gcfg.Audit, err = openAudit(g, st); err != nil {
		return nil, nil, err
	}
	if gcfg.Tracing, err = gate.NewTracing(context.Background(), os.Getenv, version()); err != nil {
		return nil, nil, err
	}
	return gate.New(gcfg), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := gcfg.Tracing.Shutdown(ctx); err != nil {
			slog.Warn("sending the last spans failed", "err", err)
		}
		if gcfg.Audit != nil {
			_ = gcfg.Audit.Close()
		}
	}, nil
}

// auditPath is the audit log's file ("" when it is off).
func auditPath(g gateFlags, st stateFlags) (string, error) {
	switch g.Audit {
	case auditOff:
		return "", nil
	case "":
		return st.dir().EnsureParent(statedir.Audit)
	}
	return g.Audit, nil
}

func openAudit(g gateFlags, st stateFlags) (*gate.AuditLog, error) {
	path, err := auditPath(g, st)
	if path == "" || err != nil {
		return nil, err
	}
	return gate.OpenAudit(path, g.AuditArgs)
}

// parseRedact reads --redact: kinds separated by commas.
func parseRedact(v string) ([]string, error) {
	kinds := strings.Split(v, ",")
	if _, err := gate.NewRedactor(kinds, nil, nil); err != nil {
		return nil, err
	}
	return kinds, nil
}
