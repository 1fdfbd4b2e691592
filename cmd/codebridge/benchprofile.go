//go:build benchprofile

package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
)

// The bench's profiling hook, compiled only into a bridge the bench
// builds with -tags benchprofile (`go run ./bench -profile DIR`); the
// codebridge users run has none of it. With CODEBRIDGE_BENCH_PROFILE set
// to a directory, each SIGUSR1 toggles a window: the first starts a CPU
// profile (cpu-N.pprof) and snapshots the allocations so far
// (allocs-N-start.pprof), the next stops it and snapshots them again
// (allocs-N-stop.pprof; `go tool pprof -base` of the two is the window's
// allocations). Nothing listens on a port.
func init() {
	dir := os.Getenv("CODEBRIDGE_BENCH_PROFILE")
	if dir == "" {
		return
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		n := 0
		var cpu *os.File
		for range sig {
			if cpu == nil {
				n++
				snapshotAllocs(filepath.Join(dir, fmt.Sprintf("allocs-%d-start.pprof", n)))
				f, err := os.Create(filepath.Join(dir, fmt.Sprintf("cpu-%d.pprof", n)))
				if err == nil && pprof.StartCPUProfile(f) == nil {
					cpu = f
				}
				continue
			}
			pprof.StopCPUProfile()
			_ = cpu.Close()
			cpu = nil
			snapshotAllocs(filepath.Join(dir, fmt.Sprintf("allocs-%d-stop.pprof", n)))
		}
	}()
}

func snapshotAllocs(path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	_ = pprof.Lookup("allocs").WriteTo(f, 0)
}
