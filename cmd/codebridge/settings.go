package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/codebridge/codebridge/sandbox"
)

// settings are everything serve can be told, from flags and environment
// variables (flags win).
type settings struct {
	configs    []string
	engine     string
	image      string
	timeout    time.Duration
	maxTimeout time.Duration
	limits     sandbox.Limits
	logLevel   slog.Level
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func loadSettings(argv []string, getenv func(string) string, stderr io.Writer) (*settings, error) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	fs := flag.NewFlagSet("codebridge serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s settings
	fs.Var((*stringList)(&s.configs), "config", "extra MCP config `file` in mcpServers format (repeatable; read after ~/MCPs/*.json)")
	engine := fs.String("engine", env("CODEBRIDGE_ENGINE", "auto"), "container engine: auto, podman or docker (CODEBRIDGE_ENGINE)")
	image := fs.String("image", env("CODEBRIDGE_IMAGE", sandbox.DefaultImage), "sandbox image with python3 (CODEBRIDGE_IMAGE)")
	timeout := fs.String("timeout", env("CODEBRIDGE_TIMEOUT", "30"), "default run_python timeout in seconds (CODEBRIDGE_TIMEOUT)")
	maxTimeout := fs.String("max-timeout", env("CODEBRIDGE_MAX_TIMEOUT", "120"), "largest timeout a call may ask for, in seconds (CODEBRIDGE_MAX_TIMEOUT)")
	memory := fs.String("memory", env("CODEBRIDGE_MEMORY", "512m"), "sandbox memory limit, e.g. 512m or 2g (CODEBRIDGE_MEMORY)")
	pids := fs.Int64("pids", envInt(getenv, "CODEBRIDGE_PIDS", 128), "sandbox process limit (CODEBRIDGE_PIDS)")
	cpus := fs.Float64("cpus", envFloat(getenv, "CODEBRIDGE_CPUS", 1), "sandbox CPU limit (CODEBRIDGE_CPUS)")
	level := fs.String("log-level", env("CODEBRIDGE_LOG_LEVEL", "info"), "debug, info, warn or error (CODEBRIDGE_LOG_LEVEL)")
	if err := fs.Parse(argv); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q; see codebridge serve -h", fs.Arg(0))
	}
	var err error
	s.engine, s.image = *engine, *image
	if s.timeout, err = seconds("timeout", *timeout); err != nil {
		return nil, err
	}
	if s.maxTimeout, err = seconds("max-timeout", *maxTimeout); err != nil {
		return nil, err
	}
	if s.limits.Memory, err = parseBytes(*memory); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	s.limits.Pids, s.limits.CPUs = *pids, *cpus
	if err := s.logLevel.UnmarshalText([]byte(*level)); err != nil {
		return nil, fmt.Errorf("log-level %q: use debug, info, warn or error", *level)
	}
	return &s, nil
}

func seconds(name, v string) (time.Duration, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("%s %q: give a positive number of seconds", name, v)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// parseBytes reads sizes such as 512m, 2g, 1048576.
func parseBytes(v string) (int64, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	mult := int64(1)
	for suffix, m := range map[string]int64{"k": 1 << 10, "m": 1 << 20, "g": 1 << 30} {
		if strings.HasSuffix(v, suffix) || strings.HasSuffix(v, suffix+"b") || strings.HasSuffix(v, suffix+"ib") {
			v = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(v, "ib"), "b"), suffix)
			mult = m
			break
		}
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a size: use a number with k, m or g (e.g. 512m)", v)
	}
	return int64(n * float64(mult)), nil
}

func envInt(getenv func(string) string, name string, def int64) int64 {
	if v, err := strconv.ParseInt(getenv(name), 10, 64); err == nil {
		return v
	}
	return def
}

func envFloat(getenv func(string) string, name string, def float64) float64 {
	if v, err := strconv.ParseFloat(getenv(name), 64); err == nil {
		return v
	}
	return def
}

func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
