package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the counters and histograms one bridge records.
type Metrics struct {
	reg        *prometheus.Registry
	runs       *prometheus.CounterVec
	runSeconds prometheus.Histogram
	rpcs       *prometheus.CounterVec
	rpcSeconds *prometheus.HistogramVec
	restarts   prometheus.Counter
	refused    prometheus.Counter
	sandboxes  prometheus.Gauge
}

// New returns metrics in a registry of their own, with the Go runtime's
// and the process's (RSS, descriptors) beside them.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "codebridge_run_python_total", Help: "run_python calls, by how they ended.",
		}, []string{"status"}),
		runSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "codebridge_run_python_seconds", Help: "Time of a run_python call, from the sandbox's side.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}),
		rpcs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "codebridge_sandbox_requests_total", Help: "Requests the sandboxes made of the host (call_tool is a proxied upstream call), by method and outcome.",
		}, []string{"method", "outcome"}),
		rpcSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "codebridge_sandbox_request_seconds", Help: "Time the host took to answer a request of a sandbox.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"method"}),
		restarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "codebridge_sandbox_restarts_total", Help: "Sandboxes replaced under a cell (crash, out of memory, code that would not stop).",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "codebridge_sessions_refused_total", Help: "New MCP sessions refused because --max-sessions were open.",
		}),
		sandboxes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "codebridge_sandboxes", Help: "Sessions that have a sandbox (made on their first run_python).",
		}),
	}
	m.reg.MustRegister(m.runs, m.runSeconds, m.rpcs, m.rpcSeconds, m.restarts, m.refused, m.sandboxes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Gauge adds a gauge whose value f reads when the metrics are scraped.
func (m *Metrics) Gauge(name, help string, f func() float64) {
	if m != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
}

// Run records a run_python call that ended with status after d;
// restarted says its sandbox was replaced under it.
func (m *Metrics) Run(status string, d time.Duration, restarted bool) {
	if m == nil {
		return
	}
	m.runs.WithLabelValues(status).Inc()
	m.runSeconds.Observe(d.Seconds())
	if restarted {
		m.restarts.Inc()
	}
}

// Request records a request of a sandbox that the host answered in d.
func (m *Metrics) Request(method string, err error, d time.Duration) {
	if m == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.rpcs.WithLabelValues(method, outcome).Inc()
	m.rpcSeconds.WithLabelValues(method).Observe(d.Seconds())
}

// Sandboxes moves the count of sessions with a sandbox by delta.
func (m *Metrics) Sandboxes(delta int) {
	if m != nil {
		m.sandboxes.Add(float64(delta))
	}
}

// Refused records a session refused for lack of room.
func (m *Metrics) Refused() {
	if m != nil {
		m.refused.Inc()
	}
}
