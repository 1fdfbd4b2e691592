package bridge

import (
	"fmt"
	"math"
	"time"
)

// runTimeouts decide a run's time limit, in one place: what a call asked
// for, capped at the maximum, or the default when it asked for none.
type runTimeouts struct {
	def, max time.Duration
}

// newRunTimeouts takes [Options.DefaultTimeout] and [Options.MaxTimeout]:
// zero means [DefaultTimeout] and [DefaultMaxTimeout], and a default
// above the maximum is lowered to it.
func newRunTimeouts(def, most time.Duration) runTimeouts {
	if most <= 0 {
		most = DefaultMaxTimeout
	}
	if def <= 0 {
		def = DefaultTimeout
	}
	return runTimeouts{def: min(def, most), max: most}
}

// of is the limit of a run that asked for d; zero means it asked for
// none.
func (t runTimeouts) of(d time.Duration) time.Duration {
	if d <= 0 {
		return t.def
	}
	return min(d, t.max)
}

// ofSeconds is the limit of a run_python call whose "timeout" argument is
// asked (nil: absent), in seconds. A value that is not a positive number
// is an error that says what to pass.
func (t runTimeouts) ofSeconds(asked *float64) (time.Duration, error) {
	if asked == nil {
		return t.def, nil
	}
	s := *asked
	if math.IsNaN(s) || s <= 0 {
		return 0, fmt.Errorf("`timeout` must be a positive number of seconds (at most %d)", int(t.max.Seconds()))
	}
	d := time.Duration(math.MaxInt64) // saturate: a float this large does not convert
	if s < d.Seconds() {
		d = max(time.Duration(s*float64(time.Second)), 1) // still asked for, however small
	}
	return t.of(d), nil
}
