package sandbox

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/codebridge/codebridge/sandbox/engine"
)

// The sandboxes of session handles, as the engine lists them: what
// `codebridge sessions` shows and ends. A handle's sandbox outlives the
// bridge that started it ([Detachable]), so the engine, not a bridge, is
// where an operator finds every one of them, whichever bridge (or none)
// holds it now.

// TagPrefix begins a session's tag: the name listings and logs give a
// session with a handle. A tag is no handle, and no handle can be made
// from it.
const TagPrefix = "s-"

// TagOf is the tag of the session whose handle digest (its sandbox's
// [LabelHandle], or a longer digest it is a prefix of) is digest.
func TagOf(digest string) string { return TagPrefix + digest[:16] }

// HandleSandbox is the sandbox of a session handle on the engine.
type HandleSandbox struct {
	ID        string // the engine's container or Pod
	Tag       string // [TagOf] its handle digest
	Principal string // its principal's label ([PrincipalLabel])
	State     string // "running", "exited", ...
}

// HandleSandboxes lists the sandboxes of session handles on eng, of every
// bridge and principal, by tag.
func HandleSandboxes(ctx context.Context, eng Engine) ([]HandleSandbox, error) {
	list, err := eng.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []HandleSandbox
	for _, c := range list {
		// A label is data: anyone with access to the engine can set one, so
		// one that is no digest (an escape sequence for the listing's
		// terminal) names no session.
		d := c.Labels[engine.LabelHandle]
		if len(d) < 16 || !digestRE.MatchString(d) {
			continue
		}
		out = append(out, HandleSandbox{ID: c.ID, Tag: TagOf(d), Principal: c.Labels[engine.LabelPrincipal], State: c.State})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tag < out[j].Tag })
	return out, nil
}

// ErrNoTag is EndHandleSandbox's answer when no sandbox has the tag.
var ErrNoTag = errors.New("no session's sandbox has this tag: `codebridge sessions` lists them")

// EndHandleSandbox removes the sandbox of the session tagged tag, whichever
// bridge holds it: its variables and files are gone. A bridge that held
// it finds its sandbox gone at its next call there.
func EndHandleSandbox(ctx context.Context, eng Engine, tag string) error {
	if !strings.HasPrefix(tag, TagPrefix) || len(tag) != len(TagPrefix)+16 {
		return fmt.Errorf("%q is not a session's tag (%s and 16 hex digits, as `codebridge sessions` lists them)", tag, TagPrefix)
	}
	list, err := HandleSandboxes(ctx, eng)
	if err != nil {
		return err
	}
	for _, h := range list {
		if h.Tag == tag {
			return removeByID(ctx, eng, h.ID)
		}
	}
	return ErrNoTag
}

// endCommand kills every process of the sandbox's user in it but its
// init, the runtime first among them, and itself: run by exec, so that a
// bridge holding the sandbox sees its channel end at once (a Pod deleted
// on Kubernetes goes on running until the kubelet kills it).
var endCommand = []string{"python3", "-I", "-c", "import os, signal; os.kill(-1, signal.SIGKILL)"}

// EndHandleSandboxOf is [EndHandleSandbox] for the sessions of one
// principal (its key, as [Detachable.Principal] gives it): another
// principal's sandbox with the tag is not found, in the same words.
func EndHandleSandboxOf(ctx context.Context, eng Engine, tag, principal string) error {
	list, err := HandleSandboxes(ctx, eng)
	if err != nil {
		return err
	}
	for _, h := range list {
		if h.Tag == tag && h.State == "running" &&
			subtle.ConstantTimeCompare([]byte(h.Principal), []byte(PrincipalLabel(principal))) == 1 {
			return removeByID(ctx, eng, h.ID)
		}
	}
	return ErrNoTag
}

// removeByID ends the runtime of container id through an exec, as an
// adopting bridge reaches one, and removes the container: the exec's
// Container removes the container it runs in.
func removeByID(ctx context.Context, eng Engine, id string) error {
	ad, ok := eng.(engine.Adopter)
	if !ok {
		return fmt.Errorf("the engine %s cannot reach a sandbox it did not start: remove %s with its own tools", eng.Name(), engine.Short(id))
	}
	ctr, err := ad.Exec(ctx, id, endCommand)
	if err != nil {
		return fmt.Errorf("reaching sandbox %s: %w", engine.Short(id), err)
	}
	ended := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, ctr.Stdout()) // until the exec ends, killed with the rest
		close(ended)
	}()
	select {
	case <-ended:
	case <-ctx.Done():
	}
	return ctr.Remove(ctx)
}
