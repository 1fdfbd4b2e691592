package otlphttp

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// DefaultTimeout is how long one export may take when
// OTEL_EXPORTER_OTLP_TIMEOUT does not say (the specification's default).
const DefaultTimeout = 10 * time.Second

// tracesPath is where a receiver takes spans, below the general endpoint.
const tracesPath = "/v1/traces"

// client posts spans to one receiver.
type client struct {
	url     string
	headers http.Header
	gzip    bool
	http    *http.Client
}

// New reads the OTEL_EXPORTER_OTLP_* variables through getenv (a
// TRACES_ variable wins over the general one) and returns the client that
// sends spans as they say. An endpoint must be set.
func New(getenv func(string) string) (otlptrace.Client, error) {
	get := func(name string) (string, string) {
		if v := getenv("OTEL_EXPORTER_OTLP_TRACES_" + name); v != "" {
			return v, "OTEL_EXPORTER_OTLP_TRACES_" + name
		}
		return getenv("OTEL_EXPORTER_OTLP_" + name), "OTEL_EXPORTER_OTLP_" + name
	}
	c := &client{headers: http.Header{}}
	var err error
	if c.url, err = endpoint(getenv); err != nil {
		return nil, err
	}
	if v, name := get("HEADERS"); v != "" {
		if err = parseHeaders(v, c.headers); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	timeout := DefaultTimeout
	if v, name := get("TIMEOUT"); v != "" {
		ms, perr := strconv.Atoi(v)
		if perr != nil || ms <= 0 {
			return nil, fmt.Errorf("%s=%s: give a positive number of milliseconds", name, v)
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	switch v, name := get("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		return nil, fmt.Errorf("%s=%s: use gzip or none", name, v)
	}
	tlsConfig, err := tlsConfig(get)
	if err != nil {
		return nil, err
	}
	c.http = &http.Client{Timeout: timeout, Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment, TLSClientConfig: tlsConfig, MaxIdleConns: 1, IdleConnTimeout: 90 * time.Second,
	}}
	return c, nil
}

// endpoint is the URL spans are posted to: the traces endpoint as given,
// or the general one with /v1/traces.
func endpoint(getenv func(string) string) (string, error) {
	raw, name := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	if raw == "" {
		raw, name = getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "OTEL_EXPORTER_OTLP_ENDPOINT"
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s=%s is not an http:// or https:// URL; give the collector's OTLP/HTTP address, such as http://localhost:4318", name, raw)
	}
	if name == "OTEL_EXPORTER_OTLP_ENDPOINT" {
		u.Path = strings.TrimSuffix(u.Path, "/") + tracesPath
	}
	return u.String(), nil
}

// parseHeaders reads key=value pairs separated by commas, values
// percent-encoded, into h.
func parseHeaders(v string, h http.Header) error {
	for _, pair := range strings.Split(v, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, val, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return errors.New("write the headers as key=value pairs separated by commas")
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return fmt.Errorf("the value of %s is not percent-encoded correctly", k)
		}
		h.Set(k, dec)
	}
	return nil
}

// tlsConfig reads the CA certificate and the client certificate and key
// (PEM files); nil when none is set.
func tlsConfig(get func(string) (string, string)) (*tls.Config, error) {
	ca, caVar := get("CERTIFICATE")
	cert, certVar := get("CLIENT_CERTIFICATE")
	key, keyVar := get("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caVar, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: %s holds no PEM certificate", caVar, ca)
		}
	}
	if cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%s and %s: %w", certVar, keyVar, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// Start does nothing: connections are made when spans are sent.
func (c *client) Start(context.Context) error { return nil }

// Stop closes the idle connection.
func (c *client) Stop(context.Context) error {
	c.http.CloseIdleConnections()
	return nil
}

// UploadTraces posts spans as one request. The body is TracesData,
// which has the same encoding as ExportTraceServiceRequest.
func (c *client) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	body, err := proto.Marshal(&tracepb.TracesData{ResourceSpans: spans})
	if err != nil {
		return err
	}
	if c.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		if err = zw.Close(); err != nil {
			return err
		}
		body = b.Bytes()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = c.headers.Clone()
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("sending spans: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("sending spans: the collector answered %s", resp.Status)
	}
	return nil
}
