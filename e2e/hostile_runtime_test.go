package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/codebridge/codebridge/sandbox"
)

// TestHostileUnknownOCIRuntime asks the real engine for an OCI runtime it
// does not know (a gVisor or Kata setting on a host without them): the
// error must name the runtime and say what to do, and leave no container.
func TestHostileUnknownOCIRuntime(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng, err := sandbox.Connect(ctx, engineOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	before, err := eng.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := eng.Start(ctx, sandbox.ContainerSpec{
		Image:  testImage,
		Cmd:    []string{"python3", "-c", "print(1)"},
		Limits: sandbox.Limits{Runtime: "codebridge-no-such-runtime"},
	})
	if err == nil {
		if rerr := c.Remove(ctx); rerr != nil {
			t.Errorf("removing that container: %v", rerr)
		}
		t.Fatal("a container started with an OCI runtime the engine does not know")
	}
	if onKubernetes() {
		mustContain(t, err.Error(), `OCI runtime "codebridge-no-such-runtime"`, "RuntimeClass")
	} else {
		mustContain(t, err.Error(), `OCI runtime "codebridge-no-such-runtime"`, "daemon.json")
	}
	after, err := eng.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) > len(before) {
		t.Fatalf("%d containers left behind: %v", len(after)-len(before), after)
	}
}
