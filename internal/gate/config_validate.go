package gate

import (
	"fmt"
	"slices"
)

// Validate says why m is not a mode, or is nil. The empty mode means
// [Open].
func (m Mode) Validate() error {
	if m == "" || slices.Contains(Modes, m) {
		return nil
	}
	return fmt.Errorf("%q is not a policy: use open, ask-destructive or read-only", string(m))
}

// Validate says what is wrong with the configuration, or is nil: the
// policy's mode, and the approval timeout (zero means the default).
func (c Config) Validate() error {
	if err := c.Policy.Mode.Validate(); err != nil {
		return err
	}
	if c.ApprovalTimeout < 0 {
		return fmt.Errorf("the approval timeout is negative (%v): give a positive number of seconds, or 0 for the default", c.ApprovalTimeout)
	}
	return nil
}
