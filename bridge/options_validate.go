package bridge

import "fmt"

// Output modes of [Options.Output].
const (
	OutputText = "text"
	OutputTOON = "toon"
)

// Validate says what is wrong with the options, or is nil: timeouts and
// the warm count must not be negative (zero means the default), and the
// output mode is text or toon.
func (o Options) Validate() error {
	if o.DefaultTimeout < 0 || o.MaxTimeout < 0 {
		return fmt.Errorf("the run_python timeouts must not be negative (default %v, max %v): give positive seconds", o.DefaultTimeout, o.MaxTimeout)
	}
	switch o.Output {
	case "", OutputText, OutputTOON:
	default:
		return fmt.Errorf("%q is not an output mode: use text or toon", o.Output)
	}
	if o.Warm < 0 {
		return fmt.Errorf("%d is not a number of sandboxes: give 0 or more", o.Warm)
	}
	return nil
}
