package httpserve

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	tokens, err := ParseTokens("alice secret-token-for-alice\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{
		{Addr: "127.0.0.1:8080"},
		{Addr: "[::1]:0", TLSCert: "c.pem", TLSKey: "k.pem"},
		{Addr: "0.0.0.0:8080", Tokens: tokens, MaxSessions: 4, IdleTimeout: time.Minute},
	} {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	for _, b := range []struct {
		o    Options
		want string
	}{
		{Options{Addr: "8080"}, "is not host:port"},
		{Options{Addr: "0.0.0.0:8080"}, "without authentication"},
		{Options{Addr: "127.0.0.1:8080", TLSCert: "c.pem"}, "TLS needs both"},
		{Options{Addr: "127.0.0.1:8080", IdleTimeout: -time.Second}, "must not be negative"},
		{Options{Addr: "127.0.0.1:8080", MaxSessionsPerUser: -1}, "must not be negative"},
	} {
		if err := b.o.Validate(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: err = %v, want %q", b.o, err, b.want)
		}
	}
}
