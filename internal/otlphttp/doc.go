// Package otlphttp sends OpenTelemetry spans to an OTLP/HTTP receiver as
// protobuf, configured by the standard OTEL_EXPORTER_OTLP_* variables
// (endpoint, headers, timeout, compression, TLS certificates).
//
// It is the transport under the SDK's own exporter (otlptrace.New with
// [New] as its client): the SDK turns spans into OTLP messages, this
// package only posts them. It exists so that the bridge does not link the
// SDK's otlptracehttp, which brings gRPC, grpc-gateway and x/net/trace
// with it (about 2 MB of resident memory in a bridge that exports
// nothing): the request body is the OTLP TracesData message, which is
// ExportTraceServiceRequest on the wire, so the gRPC service package is
// not needed either.
//
// An export that fails is not retried: the SDK drops that batch and
// reports the error through its error handler (stderr). Tracing never
// holds up a call.
package otlphttp
