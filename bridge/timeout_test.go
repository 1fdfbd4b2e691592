package bridge

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestRunTimeouts: a run's time limit is decided in one place, from what
// the call asked for: absent or zero is the default, more than the
// maximum is the maximum (however large, +Inf included), a tiny positive
// value stays asked for, and a value that is no positive number is
// refused with what to pass. The options' zero values and a default
// above the maximum are settled when the bridge is made.
func TestRunTimeouts(t *testing.T) {
	sec := func(f float64) *float64 { return &f }
	tt := newRunTimeouts(30*time.Second, 120*time.Second)
	for _, c := range []struct {
		asked *float64
		want  time.Duration
	}{
		{nil, 30 * time.Second},
		{sec(5), 5 * time.Second},
		{sec(0.5), 500 * time.Millisecond},
		{sec(500), 120 * time.Second},
		{sec(1e300), 120 * time.Second},
		{sec(math.Inf(1)), 120 * time.Second},
		{sec(1e-12), time.Nanosecond},
	} {
		got, err := tt.ofSeconds(c.asked)
		if err != nil || got != c.want {
			t.Errorf("ofSeconds(%v) = %v, %v; want %v", c.asked, got, err, c.want)
		}
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(-1)} {
		if _, err := tt.ofSeconds(sec(bad)); err == nil || !strings.Contains(err.Error(), "positive number of seconds (at most 120)") {
			t.Errorf("ofSeconds(%v): %v", bad, err)
		}
	}
	if tt.of(0) != 30*time.Second || tt.of(time.Hour) != 120*time.Second || tt.of(time.Second) != time.Second {
		t.Errorf("of: %v %v %v", tt.of(0), tt.of(time.Hour), tt.of(time.Second))
	}
	if d := newRunTimeouts(0, 0); d.def != DefaultTimeout || d.max != DefaultMaxTimeout {
		t.Errorf("zero options: %+v", d)
	}
	if d := newRunTimeouts(time.Hour, time.Minute); d.def != time.Minute || d.max != time.Minute {
		t.Errorf("default above the maximum: %+v", d)
	}
}
