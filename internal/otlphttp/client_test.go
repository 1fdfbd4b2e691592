package otlphttp

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// TestUpload: spans reach /v1/traces below the general endpoint as
// protobuf, gzip-compressed when asked, with the configured headers (the
// traces variable winning over the general one).
func TestUpload(t *testing.T) {
	type got struct {
		path, ctype, enc, auth string
		names                  []string
	}
	gotc := make(chan got, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := io.Reader(r.Body)
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Error(err)
				return
			}
			body = zr
		}
		data, _ := io.ReadAll(body)
		var td tracepb.TracesData
		if err := proto.Unmarshal(data, &td); err != nil {
			t.Error(err)
		}
		g := got{path: r.URL.Path, ctype: r.Header.Get("Content-Type"), enc: r.Header.Get("Content-Encoding"), auth: r.Header.Get("Authorization")}
		for _, rs := range td.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					g.names = append(g.names, s.Name)
				}
			}
		}
		gotc <- g
	}))
	defer srv.Close()
	c, err := New(env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        srv.URL + "/base/",
		"OTEL_EXPORTER_OTLP_HEADERS":         "Authorization=general",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS":  "Authorization=Bearer%20tok",
		"OTEL_EXPORTER_OTLP_COMPRESSION":     "gzip",
		"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT":  "5000",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
	}))
	if err != nil {
		t.Fatal(err)
	}
	spans := []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "run_python"}}}}}}
	if err := c.UploadTraces(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	g := <-gotc
	if g.path != "/base/v1/traces" || g.ctype != "application/x-protobuf" || g.enc != "gzip" || g.auth != "Bearer tok" || strings.Join(g.names, ",") != "run_python" {
		t.Fatalf("received %+v", g)
	}
}

// TestTracesEndpointAsGiven: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is the
// URL itself; a refusal by the collector is an error that says so.
func TestTracesEndpointAsGiven(t *testing.T) {
	paths := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.URL.Path
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	c, err := New(env(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": srv.URL + "/custom", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://unused.invalid"}))
	if err != nil {
		t.Fatal(err)
	}
	err = c.UploadTraces(context.Background(), nil)
	if p := <-paths; p != "/custom" || err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("path %q, err %v", p, err)
	}
}

// TestBadSettings: each variable with a value that cannot work is
// refused, naming the variable.
func TestBadSettings(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":           {"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"},
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":    {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://x"},
		"OTEL_EXPORTER_OTLP_TIMEOUT":            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"},
		"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "zstd"},
		"OTEL_EXPORTER_OTLP_HEADERS":            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"},
		"OTEL_EXPORTER_OTLP_CERTIFICATE":        {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://x", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"},
	} {
		if _, err := New(env(vars)); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err %v", name, err)
		}
	}
}
