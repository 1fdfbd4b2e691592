package gate

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	for _, cfg := range []Config{{}, {Policy: Policy{Mode: ReadOnly}, ApprovalTimeout: time.Minute}, {Policy: Policy{Mode: AskDestructive}}} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
	for _, b := range []struct {
		cfg  Config
		want string
	}{
		{Config{Policy: Policy{Mode: "closed"}}, `"closed" is not a policy: use open, ask-destructive or read-only`},
		{Config{ApprovalTimeout: -time.Second}, "approval timeout is negative"},
	} {
		if err := b.cfg.Validate(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: err = %v, want %q", b.cfg, err, b.want)
		}
	}
	for _, m := range Modes {
		if err := m.Validate(); err != nil {
			t.Errorf("mode %s: %v", m, err)
		}
	}
}
