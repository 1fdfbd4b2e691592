package moby

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/codebridge/codebridge/sandbox/engine"
	"github.com/moby/moby/client"
)

// seccompProfileFile writes the profile to a file only the current user
// can change, named by its content, and returns its path. Podman's API
// reads `seccomp=` as a path on the engine's host (Docker's reads the JSON
// itself), so this is how a local Podman gets the profile.
func seccompProfileFile(profile []byte) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "codebridge")
	if err = os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("sandbox: making %s for the seccomp profile: %w", dir, err)
	}
	sum := sha256.Sum256(profile)
	path := filepath.Join(dir, "seccomp-"+hex.EncodeToString(sum[:8])+".json")
	if old, rerr := os.ReadFile(path); rerr == nil && bytes.Equal(old, profile) {
		return path, nil
	}
	tmp, err := os.CreateTemp(dir, ".seccomp-*")
	if err != nil {
		return "", fmt.Errorf("sandbox: writing the seccomp profile: %w", err)
	}
	_, err = tmp.Write(profile)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644) // the engine's service may run as another user
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("sandbox: writing the seccomp profile to %s: %w", path, err)
	}
	return path, nil
}

// seccompOption returns the security option that gives this engine
// codebridge's seccomp profile: the JSON itself for Docker, a path to it
// for Podman, whose API (4.x, 5.x) reads the value as a file name.
func (e *mobyEngine) seccompOption(ctx context.Context) (string, error) {
	e.seccompMu.Lock()
	defer e.seccompMu.Unlock()
	switch e.seccompOpt {
	case seccompEngineDefault:
		return "", nil
	case "":
	default:
		return e.seccompOpt, nil
	}
	profile, err := engine.SeccompProfile()
	if err != nil {
		return "", err
	}
	opt := "seccomp=" + string(profile)
	if e.isPodman(ctx) {
		path, err := seccompProfileFile(profile)
		if err != nil {
			return "", err
		}
		opt = "seccomp=" + path
	}
	e.seccompOpt = opt
	return opt, nil
}

// isPodman reports whether the engine is Podman: found as one, or, for an
// address given as DOCKER_HOST, by the components its version names.
func (e *mobyEngine) isPodman(ctx context.Context) bool {
	if strings.HasPrefix(e.name, "podman") {
		return true // found as Podman; asking costs Podman half a second
	}
	v, err := e.cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return strings.HasPrefix(e.name, "podman")
	}
	for _, c := range v.Components {
		if strings.Contains(strings.ToLower(c.Name), "podman") {
			return true
		}
	}
	return false
}

// seccompUnusable records that the engine could not load the profile (a
// remote Podman, or a Podman machine, cannot read a file on this host): the
// container then runs with the engine's default profile, which `codebridge
// doctor` reports. It returns the option to use from now on.
func (e *mobyEngine) seccompUnusable(err error) string {
	e.seccompMu.Lock()
	defer e.seccompMu.Unlock()
	if e.seccompOpt != seccompEngineDefault {
		e.log.Warn("the engine cannot load codebridge's seccomp profile; the sandbox runs with the engine's default "+
			"profile, which lets code create user namespaces: use a local Podman or Docker engine", "err", err)
	}
	e.seccompOpt = seccompEngineDefault
	return ""
}

// seccompEngineDefault marks an engine that runs containers with its own
// default seccomp profile.
const seccompEngineDefault = "-"

// isSeccompError reports whether a create failed on the seccomp profile.
func isSeccompError(err error) bool {
	return strings.Contains(strings.ToLower(err.Error()), "seccomp")
}
