package reloader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Trigger makes the watched process load its configuration again.
type Trigger interface {
	// Reload returns nil once the process has accepted the new configuration.
	Reload(ctx context.Context) error
	// String names the target in logs.
	String() string
}

// maxBody bounds how much of a reload response is kept for the log.
const maxBody = 4 << 10

// HTTPTrigger reloads by calling an HTTP endpoint, such as Prometheus'
// POST /-/reload.
type HTTPTrigger struct {
	// URL is the reload endpoint.
	URL *url.URL
	// Method is the HTTP method; empty means POST.
	Method string
	// Status is the status code that means success; 0 means any 2xx.
	Status int
	// Timeout bounds each call; 0 means no bound beyond the context.
	Timeout time.Duration
	// Client sends the request; nil means a client without keep-alives.
	Client *http.Client
	// Observe, when set, is told of each call: the status code (0 without
	// an answer), the duration and the error.
	Observe func(status int, d time.Duration, err error)
}

// String returns the URL without its password and query values (RedactURL).
func (t *HTTPTrigger) String() string { return RedactURL(t.URL) }

// Reload calls the endpoint. A failed call returns an error carrying the
// status and the start of the response body, which is where Prometheus
// explains why it rejected a configuration.
func (t *HTTPTrigger) Reload(ctx context.Context) error {
	start := time.Now()
	status, err := t.call(ctx)
	if t.Observe != nil {
		t.Observe(status, time.Since(start), err)
	}
	return err
}

func (t *HTTPTrigger) call(ctx context.Context) (int, error) {
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.Timeout)
		defer cancel()
	}
	method := t.Method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, t.URL.String(), nil)
	if err != nil {
		return 0, fmt.Errorf("reload %s: %w", t, err)
	}
	client := t.Client
	if client == nil {
		client = &http.Client{Transport: newTransport()}
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return 0, fmt.Errorf("reload %s: no response within %s", t, t.Timeout)
		}
		return 0, fmt.Errorf("reload %s: %w", t, redactError(err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	var err2 error
	switch {
	case t.Status != 0 && resp.StatusCode != t.Status:
		err2 = fmt.Errorf("status %d, want %d: %s", resp.StatusCode, t.Status, strings.TrimSpace(string(body)))
	case t.Status == 0 && resp.StatusCode/100 != 2:
		err2 = fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	default:
		return resp.StatusCode, nil
	}
	if transientStatus(resp.StatusCode) {
		return resp.StatusCode, fmt.Errorf("reload %s: %w", t, err2)
	}
	return resp.StatusCode, fmt.Errorf("reload %s: %w", t, &RejectedError{Err: err2})
}

// transientStatus reports whether an HTTP status says the server could not
// take the request now (busy, starting, behind a proxy that lost it) rather
// than that it refused what it was asked to load.
func transientStatus(code int) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// RejectedError is a reload the process answered and refused: Prometheus
// found the new configuration or a rule file invalid, and keeps running the
// one it had. Err carries its explanation. Trying the same content again
// cannot help; an unreachable or busy process is not a rejection.
type RejectedError struct{ Err error }

func (e *RejectedError) Error() string { return e.Err.Error() }

func (e *RejectedError) Unwrap() error { return e.Err }

// newTransport returns a transport without keep-alives.
func newTransport() *http.Transport {
	// A reload request and its answer are small: buffers of 1 KiB
	// rather than 4 KiB cut the garbage of a reload from 20 to 14 KB.
	return &http.Transport{DisableKeepAlives: true, Proxy: http.ProxyFromEnvironment,
		ReadBufferSize: 1 << 10, WriteBufferSize: 1 << 10}
}

// Triggers reloads through every trigger in turn: several webhooks, or a
// webhook and a signal. It fails if any of them fails, after trying all.
type Triggers []Trigger

// Reload calls every trigger.
func (ts Triggers) Reload(ctx context.Context) error {
	var errs []error
	for _, t := range ts {
		errs = append(errs, t.Reload(ctx))
	}
	return errors.Join(errs...)
}

// String lists the triggers.
func (ts Triggers) String() string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.String()
	}
	return strings.Join(names, ", ")
}

// CommandTrigger reloads by running a command, for apps with a reload CLI
// (nginx -s reload, haproxy, ...). The command runs in the reloader's
// container, so it must exist there.
type CommandTrigger struct {
	// Args is the command and its arguments; no shell is involved.
	Args []string
	// Timeout bounds the command; it is killed after that.
	Timeout time.Duration
}

// String returns the command line.
func (t *CommandTrigger) String() string {
	return "command " + strconv.Quote(strings.Join(t.Args, " "))
}

// Reload runs the command; a non-zero exit is an error carrying the end of
// its output.
func (t *CommandTrigger) Reload(ctx context.Context) error {
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, t.Args[0], t.Args[1:]...)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("reload %s: no exit within %s", t, t.Timeout)
	}
	if err != nil {
		if len(out) > maxBody {
			out = out[len(out)-maxBody:]
		}
		return fmt.Errorf("reload %s: %w: %s", t, err, bytes.TrimSpace(out))
	}
	return nil
}

// ParseSignal parses a signal name (HUP, SIGHUP, usr1) or number.
func ParseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown signal %q", s)
}

// SignalTrigger reloads a process of the same pod (which must share its
// process namespace) by sending it a signal.
type SignalTrigger struct {
	// ProcessName selects the process by executable name, when PIDFile is empty.
	ProcessName string
	// PIDFile selects the process by the PID written in this file.
	PIDFile string
	// Signal is sent to the process; 0 means SIGHUP.
	Signal syscall.Signal
	// RuntimeInfoURL, when set, is Prometheus' /api/v1/status/runtimeinfo:
	// the reload counts as done once it reports a successful load after the signal.
	RuntimeInfoURL *url.URL
	// Timeout bounds the wait for that confirmation.
	Timeout time.Duration
	// Client queries RuntimeInfoURL; nil means http.DefaultClient.
	Client *http.Client
	// Proc is the procfs mount; empty means /proc.
	Proc string
}

// String names the target process.
func (t *SignalTrigger) String() string {
	if t.PIDFile != "" {
		return "pid file " + t.PIDFile
	}
	return "process " + strconv.Quote(t.ProcessName)
}

// Reload signals the process. With RuntimeInfoURL it first checks that the
// process is up (a process that has not yet installed its signal handler
// would die of SIGHUP), then waits for it to report the reload.
func (t *SignalTrigger) Reload(ctx context.Context) error {
	pid, err := t.pid()
	if err != nil {
		return fmt.Errorf("reload %s: %w", t, err)
	}
	sig := t.Signal
	if sig == 0 {
		sig = syscall.SIGHUP
	}
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.Timeout)
		defer cancel()
	}
	if t.RuntimeInfoURL == nil {
		if err := syscall.Kill(pid, sig); err != nil {
			return fmt.Errorf("reload %s: send %s to pid %d: %w", t, sig, pid, err)
		}
		return nil
	}
	p := newLoadProbe(t.client(), t.RuntimeInfoURL)
	before, err := p.status(ctx)
	if err != nil {
		return fmt.Errorf("reload %s: process not ready: %w", t, err)
	}
	if !before.precise {
		// The runtime information tells load times in whole seconds:
		// signal in a later second than the last load, so that the next
		// one can be told apart.
		if err := sleep(ctx, time.Until(before.lastSuccess.Add(time.Second))); err != nil {
			return fmt.Errorf("reload %s: %w", t, err)
		}
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("reload %s: send %s to pid %d: %w", t, sig, pid, err)
	}
	if err := p.confirm(ctx, before); err != nil {
		return fmt.Errorf("reload %s: %w", t, err)
	}
	return nil
}

func (t *SignalTrigger) client() *http.Client {
	if t.Client == nil {
		return http.DefaultClient
	}
	return t.Client
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *SignalTrigger) pid() (int, error) {
	if t.PIDFile != "" {
		b, err := os.ReadFile(t.PIDFile)
		if err != nil {
			return 0, fmt.Errorf("read pid file: %w", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			return 0, fmt.Errorf("pid file %s holds %q, not a pid", t.PIDFile, bytes.TrimSpace(b))
		}
		if err := syscall.Kill(pid, 0); err != nil {
			return 0, fmt.Errorf("pid %d from %s: %w", pid, t.PIDFile, err)
		}
		return pid, nil
	}
	proc := t.Proc
	if proc == "" {
		proc = "/proc"
	}
	entries, err := os.ReadDir(proc)
	if err != nil {
		return 0, fmt.Errorf("list processes: %w", err)
	}
	self := os.Getpid()
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if processName(filepath.Join(proc, e.Name())) == t.ProcessName {
			found = append(found, pid)
		}
	}
	switch len(found) {
	case 0:
		return 0, errors.New("no such process (does the pod share its process namespace?)")
	case 1:
		return found[0], nil
	default:
		return 0, fmt.Errorf("%d processes match: %v", len(found), found)
	}
}

// processName returns the base name of the executable a /proc/<pid> entry
// runs, from its command line (comm is cut at 15 bytes).
func processName(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil || len(b) == 0 {
		return ""
	}
	argv0, _, _ := bytes.Cut(b, []byte{0})
	return filepath.Base(string(argv0))
}
