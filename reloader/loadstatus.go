package reloader

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Where, next to its runtime information and under the same route prefix,
// Prometheus tells how its configuration loads went.
const (
	runtimeInfoPath   = "/api/v1/status/runtimeinfo"
	notificationsPath = "/api/v1/notifications"
	metricsPath       = "/metrics"
	// reloadFailedNotice is the notification Prometheus (3.0 and later)
	// adds, or dates anew, at each load that fails, and removes at the
	// next one that succeeds.
	reloadFailedNotice = "Configuration reload has failed."
	// The gauges Prometheus sets at each load: whether it succeeded, and
	// when the last one that did ended, to the sub-second.
	successMetric     = "prometheus_config_last_reload_successful"
	successTimeMetric = "prometheus_config_last_reload_success_timestamp_seconds"
	// confirmPoll is how often a load is looked for after a signal.
	confirmPoll = 10 * time.Millisecond
	// maxMetricsPage bounds how much of /metrics is read.
	maxMetricsPage = 64 << 20
)

// loadProbe asks a process what became of its last configuration load:
// Prometheus' runtime information, and, when the runtime information URL is
// Prometheus' own path, its /metrics (the time of the last successful load
// to the sub-second, where the runtime information has whole seconds) and
// its notifications (the date of the last failed load, which tells a
// failure after a failure from no load at all).
type loadProbe struct {
	client                 *http.Client
	runtimeInfo            *url.URL
	metrics, notifications *url.URL // nil when runtimeInfo is not Prometheus' path
}

func newLoadProbe(client *http.Client, runtimeInfo *url.URL) *loadProbe {
	p := &loadProbe{client: client, runtimeInfo: runtimeInfo}
	if prefix, ok := strings.CutSuffix(runtimeInfo.Path, runtimeInfoPath); ok {
		at := func(path string) *url.URL {
			u := *runtimeInfo
			u.Path, u.RawPath, u.RawQuery, u.Fragment = prefix+path, "", "", ""
			return &u
		}
		p.metrics, p.notifications = at(metricsPath), at(notificationsPath)
	}
	return p
}

// loadStatus is what a process reports of its configuration loads.
type loadStatus struct {
	success     bool      // whether the last load succeeded
	lastSuccess time.Time // when the last successful load ended
	// precise is whether lastSuccess comes from /metrics, to the
	// sub-second; else from the runtime information, in whole seconds.
	precise bool
	// failures is whether the process dates its failed loads: then
	// lastFailure is the date of the last one, zero if none is noted.
	failures    bool
	lastFailure time.Time
}

// status returns what the process reports now. The runtime information
// must answer: it says the process is up, has installed its signal
// handlers and loaded a configuration. /metrics and the notifications
// are used when they answer.
func (p *loadProbe) status(ctx context.Context) (loadStatus, error) {
	info, err := runtimeInfo(ctx, p.client, p.runtimeInfo)
	if err != nil {
		return loadStatus{}, err
	}
	st := loadStatus{success: info.ReloadConfigSuccess, lastSuccess: info.LastConfigTime}
	if p.metrics != nil {
		if success, at, err := p.metricsStatus(ctx); err == nil {
			st.success, st.lastSuccess, st.precise = success, at, true
		}
	}
	if p.notifications != nil {
		if at, err := p.lastFailure(ctx); err == nil {
			st.failures, st.lastFailure = true, at
		}
	}
	return st, nil
}

// statusLike returns what the process reports now from the same sources
// as before.
func (p *loadProbe) statusLike(ctx context.Context, before loadStatus) (loadStatus, error) {
	st := loadStatus{precise: before.precise, failures: before.failures}
	var err error
	if before.precise {
		st.success, st.lastSuccess, err = p.metricsStatus(ctx)
	} else {
		var info runtimeStatus
		info, err = runtimeInfo(ctx, p.client, p.runtimeInfo)
		st.success, st.lastSuccess = info.ReloadConfigSuccess, info.LastConfigTime
	}
	if err == nil && before.failures {
		st.lastFailure, err = p.lastFailure(ctx)
	}
	return st, err
}

// confirm polls the process until it reports a load ended after before:
// nil for a success, a RejectedError for a failure. A failure after a
// failure shows only where the process dates its failures (Prometheus 3.0
// and later); elsewhere it looks like no load at all, until ctx is done.
func (p *loadProbe) confirm(ctx context.Context, before loadStatus) error {
	tick := time.NewTicker(confirmPoll)
	defer tick.Stop()
	var last error
	for {
		st, err := p.statusLike(ctx, before)
		switch {
		case err != nil && ctx.Err() != nil && last != nil:
			// Keep the answer of the last completed query.
		case err != nil:
			last = err
		case st.success && st.lastSuccess.After(before.lastSuccess):
			return nil
		case !st.success && (before.success || st.lastFailure.After(before.lastFailure)):
			return &RejectedError{Err: fmt.Errorf("confirm through %s: process reports that the reload failed", RedactURL(p.runtimeInfo))}
		case !st.success && !before.failures:
			last = errors.New("process has not reported a successful reload since the signal, and reports that its last reload failed")
		default:
			last = errors.New("process has not reloaded since the signal")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("confirm through %s: %w", RedactURL(p.runtimeInfo), last)
		case <-tick.C:
		}
	}
}

// metricsStatus reads the load gauges of the process' /metrics.
func (p *loadProbe) metricsStatus(ctx context.Context) (success bool, at time.Time, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.metrics.String(), nil)
	if err != nil {
		return false, at, err
	}
	req.Header.Set("Accept", "text/plain")
	// Read until the two gauges, the rest dropped: not worth compressing.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := p.client.Do(req)
	if err != nil {
		return false, at, redactError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, at, fmt.Errorf("metrics: status %d", resp.StatusCode)
	}
	lines := bufio.NewScanner(io.LimitReader(resp.Body, maxMetricsPage))
	lines.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var found int
	for found < 2 && lines.Scan() {
		name, value, ok := strings.Cut(lines.Text(), " ")
		if !ok || (name != successMetric && name != successTimeMetric) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return false, at, fmt.Errorf("metrics: %s: %w", name, err)
		}
		found++
		if name == successMetric {
			success = v == 1
			continue
		}
		sec, frac := math.Modf(v)
		at = time.Unix(int64(sec), int64(frac*1e9))
	}
	if err := lines.Err(); err != nil {
		return false, time.Time{}, fmt.Errorf("metrics: %w", err)
	}
	if found < 2 {
		return false, time.Time{}, fmt.Errorf("metrics: no %s and %s", successMetric, successTimeMetric)
	}
	return success, at, nil
}

// lastFailure returns the date of the process' notification of a failed
// load, zero without one.
func (p *loadProbe) lastFailure(ctx context.Context) (time.Time, error) {
	var out struct {
		Status string `json:"status"`
		Data   []struct {
			Text string    `json:"text"`
			Date time.Time `json:"date"`
		} `json:"data"`
	}
	if err := getJSON(ctx, p.client, p.notifications, "notifications", &out); err != nil {
		return time.Time{}, err
	}
	if out.Status != "success" {
		return time.Time{}, fmt.Errorf("notifications: status %q", out.Status)
	}
	for _, n := range out.Data {
		if n.Text == reloadFailedNotice {
			return n.Date, nil
		}
	}
	return time.Time{}, nil
}

type runtimeStatus struct {
	ReloadConfigSuccess bool      `json:"reloadConfigSuccess"`
	LastConfigTime      time.Time `json:"lastConfigTime"`
}

func runtimeInfo(ctx context.Context, client *http.Client, u *url.URL) (runtimeStatus, error) {
	var out struct {
		Data runtimeStatus `json:"data"`
	}
	err := getJSON(ctx, client, u, "runtime info", &out)
	return out.Data, err
}

// getJSON decodes the answer to a GET of u, what, into v.
func getJSON(ctx context.Context, client *http.Client, u *url.URL, what string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return redactError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", what, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v); err != nil {
		return fmt.Errorf("decode %s: %w", what, err)
	}
	return nil
}
