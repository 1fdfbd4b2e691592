package moby

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codebridge/codebridge/sandbox/engine"

	"github.com/moby/moby/client"
)

// TestExitedRetriesAVanishingProcess holds Exited to the engine's answer
// once the container has stopped. Podman can fail an inspect of a
// container whose process is ending ("read /proc/PID/cgroup: no such
// process"); that failure is passing, and the reason (here: out of
// memory) must still reach the agent (CI saw "its state is unknown").
func TestExitedRetriesAVanishingProcess(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/containers/c1/json") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"message":"read /proc/25900/cgroup: no such process"}`))
			return
		}
		_, _ = w.Write([]byte(`{"Id":"c1","State":{"Running":false,"OOMKilled":true,"ExitCode":137},"HostConfig":{"Memory":536870912}}`))
	}))
	c := fakeContainer(t, srv)
	got := c.Exited(context.Background(), time.Minute)
	if want := "it ran out of memory (the limit is 512 MiB)"; !strings.HasPrefix(got, want) {
		t.Fatalf("Exited said %q, want it to start %q", got, want)
	}
	if calls.Load() != 2 {
		t.Fatalf("the engine was asked %d times, want 2", calls.Load())
	}
}

// TestExitedGoneContainer: a container the engine no longer knows has no
// state to wait for; Exited says so at once.
func TestExitedGoneContainer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"no such container"}`))
	}))
	c := fakeContainer(t, srv)
	if got := c.Exited(context.Background(), time.Hour); !strings.HasPrefix(got, "its state is unknown (") {
		t.Fatalf("Exited said %q", got)
	}
}

// fakeContainer is container "c1" of an engine that srv plays.
func fakeContainer(t *testing.T, srv *httptest.Server) *mobyContainer {
	t.Helper()
	t.Cleanup(srv.Close)
	cli, err := client.New(client.WithHost("tcp://"+srv.Listener.Addr().String()), client.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return &mobyContainer{engine: &mobyEngine{cli: cli}, id: "c1", stderr: engine.NewLogWriter("", 0, slog.New(slog.DiscardHandler))}
}
