package sandbox

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// CheckUser says why v cannot be the uid[:gid] the code runs as, or is nil:
// it must be numbers or names, and never root: uid 0 or gid 0 in any
// spelling ("0", "00", "root") is refused.
func CheckUser(v string) error {
	parts := strings.Split(v, ":")
	if len(parts) > 2 {
		return fmt.Errorf("%q is not uid:gid; use numbers such as 65534:65534", v)
	}
	for i, p := range parts {
		what := [...]string{"uid", "gid"}[i]
		if p == "" {
			return fmt.Errorf("%q has an empty %s; use numbers such as 65534:65534", v, what)
		}
		n, err := strconv.ParseUint(p, 10, 32)
		isNumber := err == nil
		if (isNumber && n == 0) || (!isNumber && p == "root") {
			return fmt.Errorf("%q would run model-written code with %s 0 (root); use an unprivileged uid:gid such as 65534:65534", v, what)
		}
		if !isNumber && strings.Trim(p, "0123456789") == "" {
			return fmt.Errorf("%q: %s %s is out of range", v, what, p)
		}
	}
	return nil
}

// Validate says what is wrong with the configuration, or is nil: the
// limits, the user (never root), the output limit, and the mounts, whose
// container paths must be absolute.
func (cfg Config) Validate() error {
	if err := cfg.Limits.Validate(); err != nil {
		return err
	}
	if cfg.User != "" {
		if err := CheckUser(cfg.User); err != nil {
			return err
		}
	}
	if cfg.OutputLimit < 0 {
		return fmt.Errorf("the output limit is negative (%d): give a positive number of characters, or 0 for the default", cfg.OutputLimit)
	}
	if c := cfg.Checkpoints; c != nil && (*c < 0 || *c > MaxCheckpoints) {
		return fmt.Errorf("the checkpoints for rewind are %d: give 0 (none: rewind is off) to %d", *c, MaxCheckpoints)
	}
	if cfg.StartTimeout < 0 || cfg.Grace < 0 {
		return errors.New("the sandbox's start timeout and grace must not be negative: give a positive duration, or 0 for the default")
	}
	if cfg.Detachable != nil {
		if err := cfg.Detachable.check(); err != nil {
			return err
		}
	}
	if cfg.Workspace != nil && cfg.Workspace.Source == "" {
		return errors.New("the workspace has no source: give a host directory or a volume name")
	}
	for _, m := range cfg.Mounts {
		if m.Source == "" {
			return errors.New("a mount has no source: give a host directory or a volume name")
		}
		if !strings.HasPrefix(m.Target, "/") {
			return fmt.Errorf("the mount of %s goes to %q, which is not an absolute container path: give one such as /mnt/project", m.Source, m.Target)
		}
	}
	return nil
}
