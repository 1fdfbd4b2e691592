package upstream

import (
	"slices"
	"testing"
)

func TestUpstreamEnvKeepsOnlyTheDefaultsAndTheConfig(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin", "HOME=/home/me", "LANG=C.UTF-8", "LC_CTYPE=C.UTF-8",
		"GITHUB_TOKEN=ghp_secret", "ANTHROPIC_API_KEY=sk-secret", "AWS_SECRET_ACCESS_KEY=x",
		"SHELL=() { :; }", "noequals",
	}
	got := upstreamEnv(environ, map[string]string{"API_KEY": "configured", "HOME": "/srv"})
	want := []string{"PATH=/usr/bin", "HOME=/home/me", "LANG=C.UTF-8", "LC_CTYPE=C.UTF-8", "API_KEY=configured", "HOME=/srv"}
	if !slices.Equal(got, want) {
		t.Fatalf("upstreamEnv = %q, want %q", got, want)
	}
}
