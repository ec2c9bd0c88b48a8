package collect

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"time"
)

// Reload says what to do after a burst of changes is on disk: run Script,
// then send Method URL, once for the whole burst.
type Reload struct {
	// URL is REQ_URL; empty sends nothing.
	URL string
	// Method is REQ_METHOD: GET (the default) or POST.
	Method string
	// Payload is the JSON body of a POST (REQ_PAYLOAD, a JSON string of it
	// if it is not JSON); nil sends none.
	Payload []byte
	// Script is SCRIPT: run directly if executable, else with sh.
	Script string
}

const (
	// quiet is how long a burst must be quiet before its reload: the
	// changes of a kubectl apply of many objects arrive a few ms apart.
	quiet = 250 * time.Millisecond
	// maxDelay bounds the wait for a burst that does not end.
	maxDelay = 5 * time.Second
	// firstReloadRetry and maxReloadRetry bound the backoff after a reload
	// that failed even after its HTTP retries.
	firstReloadRetry = time.Second
	maxReloadRetry   = time.Minute
)

// notifier sends one reload per burst of changes.
type notifier struct {
	logger  *slog.Logger
	m       *metrics
	req     *requester
	opts    Reload
	changes chan struct{}
	// fire reloads once: reload, but in tests.
	fire func(context.Context) error
}

func newNotifier(logger *slog.Logger, m *metrics, req *requester, opts Reload) *notifier {
	n := &notifier{logger: logger, m: m, req: req, opts: opts, changes: make(chan struct{}, 1)}
	n.fire = n.reload
	return n
}

// changed says that files changed on disk; it never blocks.
func (n *notifier) changed() {
	select {
	case n.changes <- struct{}{}:
	default:
	}
}

// run reloads after each burst of changes until ctx is done. A reload that
// fails is tried again with backoff until it succeeds or a new change
// comes, which makes a new burst.
func (n *notifier) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-n.changes:
		}
		if !n.settle(ctx) {
			return nil
		}
		for failures := 0; ; failures++ {
			if err := n.fire(ctx); err == nil || ctx.Err() != nil {
				break
			}
			wait := min(firstReloadRetry<<min(failures, 6), maxReloadRetry)
			t := time.NewTimer(wait)
			retry := false
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-n.changes:
				// A new burst: it makes its own reload.
				t.Stop()
				n.changed()
			case <-t.C:
				retry = true
			}
			if !retry {
				break
			}
		}
	}
}

// settle waits until no change came for quiet, or maxDelay passed; false
// if ctx ended first.
func (n *notifier) settle(ctx context.Context) bool {
	deadline := time.Now().Add(maxDelay)
	t := time.NewTimer(quiet)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-n.changes:
			t.Reset(min(quiet, time.Until(deadline)))
		case <-t.C:
			return true
		}
	}
}

// reload runs the script, then sends the request; its error is the
// request's.
func (n *notifier) reload(ctx context.Context) error {
	if n.opts.Script != "" {
		n.runScript(ctx)
	}
	if n.opts.URL == "" {
		return nil
	}
	method := n.opts.Method
	if method == "" {
		method = http.MethodGet
	}
	var body []byte
	if method == http.MethodPost {
		body = n.opts.Payload
	}
	n.m.reloads.Inc()
	resp, err := n.req.do(ctx, method, n.opts.URL, body, 1<<20)
	if err == nil && resp.status >= 400 {
		err = fmt.Errorf("answered %d", resp.status)
	}
	if err != nil {
		if ctx.Err() == nil {
			n.m.reloadsFailed.Inc()
			n.m.lastSuccess.Set(0)
			n.logger.Error("reload", "err", err)
		}
		return err
	}
	n.m.lastSuccess.Set(1)
	n.m.lastSuccessSeconds.SetToCurrentTime()
	n.logger.Info("reloaded", "status", resp.status)
	return nil
}

func (n *notifier) runScript(ctx context.Context) {
	n.m.scripts.Inc()
	cmd := exec.CommandContext(ctx, n.opts.Script)
	if st, err := os.Stat(n.opts.Script); err == nil && st.Mode()&0o111 == 0 {
		cmd = exec.CommandContext(ctx, "sh", n.opts.Script)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() == nil {
			n.m.scriptsFailed.Inc()
			n.logger.Error("run script", "script", n.opts.Script, "err", err, "output", truncate(out, 1024))
		}
		return
	}
	n.logger.Debug("script ran", "script", n.opts.Script, "output", truncate(out, 1024))
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
