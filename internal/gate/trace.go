package gate

import (
	"context"
	"fmt"
	"strings"

	"github.com/codebridge/codebridge/internal/otlphttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Tracing holds the tracer spans are made with: a real one when the
// standard OTEL_EXPORTER_OTLP_* variables ask for export, else a no-op.
type Tracing struct {
	tracer   trace.Tracer
	provider *sdktrace.TracerProvider // nil when off
}

// otlpVars are the variables that turn export on (internal/otlphttp reads
// the rest of OTEL_EXPORTER_OTLP_*: headers, timeout, compression, TLS).
var otlpVars = []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"}

// NewTracing starts OTLP export (HTTP/protobuf) when getenv sets
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (and
// OTEL_SDK_DISABLED is not true); otherwise spans cost nothing.
func NewTracing(ctx context.Context, getenv func(string) string, version string) (*Tracing, error) {
	on := false
	for _, v := range otlpVars {
		on = on || getenv(v) != ""
	}
	if !on || strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return &Tracing{tracer: noop.NewTracerProvider().Tracer("codebridge")}, nil
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if p := getenv(v); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("%s=%s: codebridge exports traces over http/protobuf only; set it to http/protobuf and point the endpoint at the collector's HTTP port (4318)", v, p)
		}
	}
	client, err := otlphttp.New(getenv)
	if err != nil {
		return nil, fmt.Errorf("setting up OpenTelemetry export: %w", err)
	}
	exp, err := otlptrace.New(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("setting up OpenTelemetry export: %w; check the OTEL_EXPORTER_OTLP_* variables", err)
	}
	res, _ := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", serviceName(getenv)), attribute.String("service.version", version)))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{tracer: tp.Tracer("github.com/codebridge/codebridge/internal/gate"), provider: tp}, nil
}

func serviceName(getenv func(string) string) string {
	if n := getenv("OTEL_SERVICE_NAME"); n != "" {
		return n
	}
	return "codebridge"
}

// Shutdown sends the spans still buffered and stops export.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.provider == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

func (t *Tracing) start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	return t.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
}

// endSpan ends span with its outcome.
func endSpan(span trace.Span, outcome, msg string) {
	span.SetAttributes(attribute.String("codebridge.outcome", outcome))
	if outcome != "ok" {
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}
