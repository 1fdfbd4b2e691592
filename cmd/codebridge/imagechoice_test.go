package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/internal/imagebuild"
	"github.com/codebridge/codebridge/sandbox"
)

func TestChooseImage(t *testing.T) {
	cases := []struct {
		name       string
		configured string
		has        []string
		want       string
		present    bool
		fix        string
	}{
		{"built image present", "", []string{imagebuild.DefaultTag, sandbox.DefaultImage}, imagebuild.DefaultTag, true, ""},
		{"only the registry image", "", []string{sandbox.DefaultImage}, sandbox.DefaultImage, true, ""},
		{"none: the registry image, pulled on first use", "", nil, sandbox.DefaultImage, false, "codebridge image build ("},
		{"configured wins", "my/img", []string{imagebuild.DefaultTag}, "my/img", false, "pull my/img (podman pull my/img), or build codebridge's own image with codebridge image build ("},
		{"a local name may be built", "localhost/mine:1", nil, "localhost/mine:1", false, "codebridge image build --tag localhost/mine:1 ("},
		{"configured and present", "my/img", []string{"my/img"}, "my/img", true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			has := func(_ context.Context, img string) (bool, error) {
				for _, h := range c.has {
					if h == img {
						return true, nil
					}
				}
				return false, nil
			}
			got, err := chooseImage(context.Background(), c.configured, has)
			if err != nil || got.name != c.want || got.present != c.present {
				t.Fatalf("got %+v, %v; want %s present=%v", got, err, c.want, c.present)
			}
			if c.fix != "" && !strings.HasPrefix(got.fix(), c.fix) {
				t.Errorf("fix %q, want it to start with %q", got.fix(), c.fix)
			}
			// A build is never tagged with a registry's name.
			if !c.present && !strings.HasPrefix(c.want, "localhost/") && strings.Contains(got.fix(), "--tag "+c.want) {
				t.Errorf("fix %q names a built image %s", got.fix(), c.want)
			}
		})
	}
	boom := errors.New("engine gone")
	if _, err := chooseImage(context.Background(), "", func(context.Context, string) (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Errorf("engine error lost: %v", err)
	}
}

// servers --json masks secret values and uses lowercase keys.
func TestServersJSONMasksSecrets(t *testing.T) {
	home := t.TempDir()
	writeFile(t, home+"/MCPs/s.json", `{"mcpServers": {
		"local": {"command": "srv", "env": {"API_KEY": "sk-live-123"}},
		"remote": {"url": "https://u:pw-456@example.com/mcp?token=tok-789&x=1", "headers": {"Authorization": "Bearer hdr-000"}}}}`)
	out, errOut, code := runCLI(t, map[string]string{"HOME": home}, "servers", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, secret := range []string{"sk-live-123", "pw-456", "tok-789", "hdr-000"} {
		if strings.Contains(out+errOut, secret) {
			t.Errorf("secret %q printed:\n%s", secret, out)
		}
	}
	mustContain(t, out, `"name": "local"`, `"API_KEY": "***"`, `"Authorization": "***"`, `"source": `, `"command": "srv"`)
	if strings.Contains(out, `"Name"`) || strings.Contains(out, `"Env"`) {
		t.Errorf("Go field names as keys:\n%s", out)
	}
}

// A configuration problem is a warning: servers still lists and exits 0,
// and nothing below warnings is logged.
func TestServersWarningIsNotFailure(t *testing.T) {
	home := t.TempDir()
	writeFile(t, home+"/MCPs/good.json", `{"mcpServers": {"ok": {"command": "srv"}}}`)
	writeFile(t, home+"/MCPs/bad.json", `{"mcpServers": {"x": {"command": 5}}}`)
	out, errOut, code := runCLI(t, map[string]string{"HOME": home}, "servers")
	if code != 0 || !strings.Contains(out, "ok") || !strings.Contains(errOut, "level=WARN") || strings.Contains(errOut, "level=INFO") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
