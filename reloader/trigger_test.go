package reloader

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

// signalTargetEnv makes the test binary run signalTarget instead of the tests.
const signalTargetEnv = "PODRELOAD_SIGNAL_TARGET"

// signalTarget is the test binary run as the process a SignalTrigger signals.
// A process started under nohup inherits an ignored SIGHUP, and so would a
// plain sleep: it would outlive the signal, and the test would check its
// environment rather than our code. signal.Notify handles a signal even if it
// was ignored at start (signal.Reset would ignore it again), so the target
// reports which signal arrived, on stdout, whatever it inherited. It ends
// when its stdin closes, so it never outlives the test.
func signalTarget() int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGUSR1)
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(eof)
	}()
	fmt.Println("ready")
	select {
	case sig := <-sigs:
		fmt.Println(int(sig.(syscall.Signal)))
		return 0
	case <-eof:
		return 1
	}
}

// target starts a signalTarget whose command line names the executable name,
// once it handles signals; the returned function waits up to 10s for the
// signal it got.
func target(t *testing.T, name string) (*exec.Cmd, func() syscall.Signal) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Args[0] = name // What /proc/<pid>/cmdline shows.
	cmd.Env = append(os.Environ(), signalTargetEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	lines := bufio.NewScanner(stdout)
	require.NoError(t, stdout.(*os.File).SetReadDeadline(time.Now().Add(10*time.Second)))
	require.True(t, lines.Scan(), "target not ready within 10s: %v", lines.Err())
	require.Equal(t, "ready", lines.Text())
	return cmd, func() syscall.Signal {
		require.NoError(t, stdout.(*os.File).SetReadDeadline(time.Now().Add(10*time.Second)))
		require.True(t, lines.Scan(), "no signal reported within 10s: %v", lines.Err())
		n, err := strconv.Atoi(lines.Text())
		require.NoError(t, err)
		return syscall.Signal(n)
	}
}

func TestSignalTrigger(t *testing.T) {
	t.Run("by name", func(t *testing.T) {
		name := fmt.Sprintf("podreload-target-%d", os.Getpid())
		_, wait := target(t, name)
		require.NoError(t, (&SignalTrigger{ProcessName: name}).Reload(t.Context()))
		require.Equal(t, syscall.SIGHUP, wait())
	})
	t.Run("by pid file with another signal", func(t *testing.T) {
		cmd, wait := target(t, "podreload-pid-target")
		pidFile := filepath.Join(t.TempDir(), "app.pid")
		require.NoError(t, os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644))
		require.NoError(t, (&SignalTrigger{PIDFile: pidFile, Signal: syscall.SIGUSR1}).Reload(t.Context()))
		require.Equal(t, syscall.SIGUSR1, wait())
	})
	t.Run("confirmed by runtime info", func(t *testing.T) {
		name := fmt.Sprintf("podreload-confirm-%d", os.Getpid())
		_, wait := target(t, name)
		srv := runtimeInfoServer(t, func(int) (bool, time.Time) { return true, time.Now() })
		tr := &SignalTrigger{ProcessName: name, RuntimeInfoURL: mustURL(t, srv.URL), Timeout: 5 * time.Second}
		require.NoError(t, tr.Reload(t.Context()))
		require.Equal(t, syscall.SIGHUP, wait())
	})

	stale := exec.Command("true")
	require.NoError(t, stale.Run())
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	stalePID := write("stale.pid", strconv.Itoa(stale.Process.Pid))
	garbage := write("garbage.pid", "not a pid\n")
	missing := filepath.Join(dir, "missing.pid")
	name := fmt.Sprintf("podreload-unconfirmed-%d", os.Getpid())
	target(t, name)
	start := time.Now().Add(-time.Hour)
	// Succeeded before the signal, failed after it.
	failed := runtimeInfoServer(t, func(n int) (bool, time.Time) { return n == 0, start })
	// Failed before and after.
	failedAgain := runtimeInfoServer(t, func(int) (bool, time.Time) { return false, start })
	old := runtimeInfoServer(t, func(int) (bool, time.Time) { return true, start })
	down := mustURL(t, "http://127.0.0.1:1/api/v1/status/runtimeinfo")
	for _, tc := range []struct {
		name    string
		trigger *SignalTrigger
		err     string
	}{
		{"absent process", &SignalTrigger{ProcessName: "podreload-absent"},
			`reload process "podreload-absent": no such process (does the pod share its process namespace?)`},
		{"missing pid file", &SignalTrigger{PIDFile: missing},
			`reload pid file ` + missing + `: read pid file: open ` + missing + `: no such file or directory`},
		{"stale pid file", &SignalTrigger{PIDFile: stalePID},
			fmt.Sprintf(`reload pid file %s: pid %d from %s: no such process`, stalePID, stale.Process.Pid, stalePID)},
		{"garbage pid file", &SignalTrigger{PIDFile: garbage},
			`reload pid file ` + garbage + `: pid file ` + garbage + ` holds "not a pid", not a pid`},
		{"reload reported failed", &SignalTrigger{ProcessName: name, Signal: syscall.SIGCONT, RuntimeInfoURL: mustURL(t, failed.URL), Timeout: time.Minute},
			`reload process "` + name + `": confirm through ` + failed.URL + `: process reports that the reload failed`},
		{"reload failed again", &SignalTrigger{ProcessName: name, Signal: syscall.SIGCONT, RuntimeInfoURL: mustURL(t, failedAgain.URL), Timeout: 200 * time.Millisecond},
			`reload process "` + name + `": confirm through ` + failedAgain.URL + `: process has not reported a successful reload since the signal, and reports that its last reload failed`},
		{"process not ready", &SignalTrigger{ProcessName: name, Signal: syscall.SIGCONT, RuntimeInfoURL: down, Timeout: time.Second},
			`reload process "` + name + `": process not ready: Get "` + down.String() + `": dial tcp 127.0.0.1:1: connect: connection refused`},
		{"no reload since the signal", &SignalTrigger{ProcessName: name, Signal: syscall.SIGCONT, RuntimeInfoURL: mustURL(t, old.URL), Timeout: 200 * time.Millisecond},
			`reload process "` + name + `": confirm through ` + old.URL + `: process has not reloaded since the signal`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.EqualError(t, tc.trigger.Reload(t.Context()), tc.err)
		})
	}
}

// runtimeInfoServer answers like Prometheus' runtime information endpoint,
// with status(n) for its n-th query.
func runtimeInfoServer(t *testing.T, status func(n int) (bool, time.Time)) *httptest.Server {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		success, last := status(n)
		n++
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{
			"reloadConfigSuccess": success, "lastConfigTime": last.UTC().Format(time.RFC3339),
		}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPTrigger(t *testing.T) {
	var method string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method = r.Method
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	require.NoError(t, (&HTTPTrigger{URL: mustURL(t, srv.URL)}).Reload(t.Context()))
	require.Equal(t, http.MethodPost, method)
	tr := &HTTPTrigger{URL: mustURL(t, srv.URL), Method: http.MethodGet, Status: http.StatusAccepted}
	require.EqualError(t, tr.Reload(t.Context()), "reload "+srv.URL+": status 200, want 202: ok")
	require.Equal(t, http.MethodGet, method)
	u := mustURL(t, srv.URL)
	u.User = url.UserPassword("admin", "secret")
	require.Equal(t, "http://admin:xxxxx@"+u.Host, (&HTTPTrigger{URL: u}).String())
}

func TestCommandTrigger(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "reloaded")
	require.NoError(t, (&CommandTrigger{Args: []string{"touch", marker}}).Reload(t.Context()))
	require.FileExists(t, marker)

	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{"fails", []string{"sh", "-c", "echo 'nginx: [emerg] unknown directive \"x\"' >&2; exit 1"},
			`reload command "sh -c echo 'nginx: [emerg] unknown directive \"x\"' >&2; exit 1": exit status 1: nginx: [emerg] unknown directive "x"`},
		{"hangs", []string{"sleep", "30"}, `reload command "sleep 30": no exit within 100ms`},
		{"missing", []string{"/no/such/reload-cli"}, `reload command "/no/such/reload-cli": fork/exec /no/such/reload-cli: no such file or directory: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (&CommandTrigger{Args: tc.args, Timeout: 100 * time.Millisecond}).Reload(t.Context())
			require.EqualError(t, err, tc.err)
		})
	}
}

func TestTriggers(t *testing.T) {
	var calls []string
	handler := func(name string, status int) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			calls = append(calls, name)
			w.WriteHeader(status)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	a, b, c := handler("a", 200), handler("b", 500), handler("c", 200)
	var observed []int
	observe := func(status int, _ time.Duration, _ error) { observed = append(observed, status) }
	ts := Triggers{
		&HTTPTrigger{URL: mustURL(t, a.URL), Observe: observe},
		&HTTPTrigger{URL: mustURL(t, b.URL), Observe: observe},
		&HTTPTrigger{URL: mustURL(t, c.URL), Observe: observe},
	}
	require.EqualError(t, ts.Reload(t.Context()), "reload "+b.URL+": status 500: ")
	require.Equal(t, []string{"a", "b", "c"}, calls, "every trigger is called, even after a failure")
	require.Equal(t, []int{200, 500, 200}, observed)
	require.Equal(t, a.URL+", "+b.URL+", "+c.URL, ts.String())
}

func TestParseSignal(t *testing.T) {
	for in, want := range map[string]syscall.Signal{"HUP": syscall.SIGHUP, "SIGUSR1": syscall.SIGUSR1, "usr2": syscall.SIGUSR2, "15": syscall.SIGTERM} {
		got, err := ParseSignal(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := ParseSignal("SIGNOPE")
	require.EqualError(t, err, `unknown signal "SIGNOPE"`)
}
