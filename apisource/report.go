package apisource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/reloader"
)

// maxMessage bounds a rejection's message in the annotation: Prometheus'
// explanations are a line or two, and an annotation is read with the pod.
const maxMessage = 4 << 10

// reportTimeout bounds one write of a report.
const reportTimeout = 30 * time.Second

// NewApplied returns the annotation's value for what the reloader reports.
func NewApplied(a reloader.Applied) contract.Applied {
	out := contract.Applied{Hash: a.Hash, Time: rfc3339(a.Time)}
	if a.Rejection != nil {
		msg := a.Rejection.Message
		if len(msg) > maxMessage {
			msg = msg[:maxMessage] + "..."
		}
		out.Rejection = &contract.Rejection{Message: msg, Time: rfc3339(a.Rejection.Time)}
	}
	return out
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// ReporterOptions says which pod a Reporter annotates.
type ReporterOptions struct {
	// Config reaches the API server.
	Config Config
	// Namespace and Name name the pod. Required.
	Namespace, Name string
}

// Reporter writes what the reloader reports into contract.AppliedAnnotation of a
// pod, with a JSON merge patch. Report never blocks: only the latest report
// waits to be written, and a failed write is retried with backoff until it
// succeeds or a newer report replaces it.
type Reporter struct {
	c      *client
	logger *slog.Logger
	path   string
	pod    string
	errors prometheus.Counter
	w      *latestWriter[string]
	// written is the last report written, in JSON; only w's run reads
	// and sets it.
	written string
}

// NewReporter returns a Reporter; Run writes. A nil logger discards logs.
func NewReporter(logger *slog.Logger, reg prometheus.Registerer, opts ReporterOptions) (*Reporter, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.Namespace == "" || opts.Name == "" {
		return nil, errors.New("the pod to report on needs a namespace and a name")
	}
	c, err := newClient(opts.Config)
	if err != nil {
		return nil, err
	}
	r := &Reporter{
		c: c, logger: logger,
		path: "/api/v1/namespaces/" + url.PathEscape(opts.Namespace) + "/pods/" + url.PathEscape(opts.Name),
		pod:  opts.Namespace + "/" + opts.Name,
		errors: promauto.With(reg).NewCounter(prometheus.CounterOpts{
			Name: "reloader_report_errors_total",
			Help: "Total number of failed writes of what Prometheus runs into the pod's " + contract.AppliedAnnotation + " annotation.",
		}),
	}
	r.w = newLatestWriter(r.write, r.writeFailed)
	return r, nil
}

// Report replaces the report waiting to be written with a. It does not
// block: a reloader.Options.OnApplied.
func (r *Reporter) Report(a reloader.Applied) {
	value, err := json.Marshal(NewApplied(a))
	if err != nil {
		r.logger.Error("encode the report", "err", err)
		return
	}
	r.w.set(string(value))
}

// Run writes reports until ctx is done. A report equal to the last one
// written is not written again.
func (r *Reporter) Run(ctx context.Context) error {
	return r.w.run(ctx)
}

// write sets the pod's annotation to value, unless it was the last value
// written.
func (r *Reporter) write(ctx context.Context, value string) error {
	if value == r.written {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{contract.AppliedAnnotation: value}}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	if err := r.c.mergePatch(ctx, r.path, patch); err != nil {
		return fmt.Errorf("patch pod %s: %w", r.pod, err)
	}
	r.written = value
	r.logger.Debug("reported", "pod", r.pod, "applied", value)
	return nil
}

// writeFailed logs and counts a failed write of the report.
func (r *Reporter) writeFailed(err error, attempt int, wait time.Duration) {
	r.errors.Inc()
	r.logger.Warn("report what Prometheus runs", "pod", r.pod, "err", err, "attempt", attempt, "retry_in", wait.Round(time.Millisecond))
}
