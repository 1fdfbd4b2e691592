package bridge

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{{}, {DefaultTimeout: time.Second, MaxTimeout: time.Minute, Output: OutputTOON, Warm: 2}, {Output: OutputText}} {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	for _, b := range []struct {
		o    Options
		want string
	}{
		{Options{DefaultTimeout: -time.Second}, "must not be negative"},
		{Options{MaxTimeout: -time.Second}, "must not be negative"},
		{Options{Output: "compact"}, `"compact" is not an output mode: use text or toon`},
		{Options{Warm: -1}, "give 0 or more"},
	} {
		if err := b.o.Validate(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: err = %v, want %q", b.o, err, b.want)
		}
	}
}
