// Package admintest reads a service's admin listener in tests: its
// /metrics parsed with Prometheus's own text parser, and its /readyz
// awaited with a bounded wait.
package admintest

import (
	"context"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// requestTimeout bounds one request; above the listener's own check
// timeout, so that a slow check answers 503 rather than timing out here.
const requestTimeout = 5 * time.Second

// Get returns the status and body of GET http://addr+path.
func Get(t testing.TB, addr, path string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatalf("admintest: %v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("admintest: GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("admintest: read %s: %v", path, err)
	}
	return resp.StatusCode, string(body)
}

// Metrics scrapes /metrics and parses it as Prometheus text, by metric
// family name.
func Metrics(t testing.TB, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	status, body := Get(t, addr, "/metrics")
	if status != http.StatusOK {
		t.Fatalf("admintest: /metrics answered %d: %s", status, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("admintest: parse /metrics: %v\n%s", err, body)
	}
	return families
}

// RequireFamilies fails t unless /metrics has every named family, of its
// type; it waits (at most waitFor) for families that need something to
// happen first, such as a delivery.
func RequireFamilies(t testing.TB, addr string, want map[string]dto.MetricType) map[string]*dto.MetricFamily {
	t.Helper()
	var families map[string]*dto.MetricFamily
	missing := ""
	if !poll(func() bool {
		families, missing = Metrics(t, addr), ""
		for name, typ := range want {
			if f, ok := families[name]; !ok || f.GetType() != typ {
				missing = name
				return false
			}
		}
		return true
	}) {
		t.Fatalf("admintest: /metrics lacks %s (a %s) after %s; it has %v", missing, want[missing], waitFor, names(families))
	}
	return families
}

// AwaitReady waits, at most waitFor, until /readyz answers status; it
// returns the body of that answer.
func AwaitReady(t testing.TB, addr string, status int) string {
	t.Helper()
	var got int
	var body string
	if !poll(func() bool {
		got, body = Get(t, addr, "/readyz")
		return got == status
	}) {
		t.Fatalf("admintest: /readyz still %d (%q) after %s, want %d", got, body, waitFor, status)
	}
	return body
}

// waitFor bounds the waits; pollEvery is how often they look again.
const (
	waitFor   = 15 * time.Second
	pollEvery = 20 * time.Millisecond
)

// poll calls done until it returns true (true) or waitFor has passed
// (false).
func poll(done func() bool) bool {
	deadline := time.NewTimer(waitFor)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for !done() {
		select {
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
	return true
}

func names(families map[string]*dto.MetricFamily) []string {
	out := make([]string, 0, len(families))
	for name := range families {
		out = append(out, name)
	}
	return out
}

// Connections are the metric families every service serves about its
// connections: its PostgreSQL pool's and its NATS connection's.
func Connections() map[string]dto.MetricType {
	return map[string]dto.MetricType{
		"sundial_db_pool_connections":                dto.MetricType_GAUGE,
		"sundial_db_pool_max_connections":            dto.MetricType_GAUGE,
		"sundial_db_pool_empty_acquires_total":       dto.MetricType_COUNTER,
		"sundial_db_pool_acquire_wait_seconds_total": dto.MetricType_COUNTER,
		"sundial_nats_client_messages_total":         dto.MetricType_COUNTER,
		"sundial_nats_client_bytes_total":            dto.MetricType_COUNTER,
		"sundial_nats_client_reconnects_total":       dto.MetricType_COUNTER,
	}
}

// With returns want with more's families added.
func With(want, more map[string]dto.MetricType) map[string]dto.MetricType {
	out := maps.Clone(want)
	maps.Copy(out, more)
	return out
}
