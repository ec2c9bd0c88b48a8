package projector

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// killAfter is how long Close waits for the projector to exit on SIGTERM
// before it kills it.
const killAfter = 10 * time.Second

// KubeletVolume is a Secret or ConfigMap volume of the pod a Kubelet runs.
type KubeletVolume struct {
	// Kind is "secret" or "configmap".
	Kind string
	// Name is the name of the object, in the Kubelet's namespace.
	Name string
	// Dir is the volume directory; it is created if missing.
	Dir string
	// Optional makes an absent object an empty volume, as `optional: true`
	// does in a pod. A volume that is not optional is not written until its
	// object exists and keeps its last content when the object is deleted.
	Optional bool
}

// Projection is one write of a volume by a Kubelet.
type Projection struct {
	// Kind and Name are the KubeletVolume's.
	Kind, Name string
	// ResourceVersion is the version of the object written, empty when an
	// optional object is absent and the volume was emptied.
	ResourceVersion string
	// Start and End are the times just before and after the kubelet's
	// atomic writer wrote the volume.
	Start, End time.Time
}

// Kubelet does for a set of Secret and ConfigMap volumes what the kubelet
// does for a pod's: it watches their objects through an API server and
// writes them with the kubelet's own atomic writer (bin/projector).
type Kubelet struct {
	cmd         *exec.Cmd
	projections chan Projection
	errs        chan error
	stop        chan struct{} // closed by Close: stop delivering
	scanned     chan struct{} // closed when the projector's stdout is at EOF
	pumped      chan struct{} // closed when the delivering goroutine returns

	closeOnce sync.Once
	closeErr  error
}

// StartKubelet runs bin/projector against the API server of kubeconfig,
// projecting volumes whose objects are in namespace. It stops when ctx is
// done or Close is called; Close must be called in any case.
func StartKubelet(ctx context.Context, kubeconfig, namespace string, volumes []KubeletVolume) (*Kubelet, error) {
	bin, err := toolbin.Path("projector")
	if err != nil {
		return nil, err
	}
	args := []string{"-kubeconfig", kubeconfig, "-namespace", namespace}
	for _, v := range volumes {
		spec := v.Kind + ":" + v.Name + ":" + v.Dir
		if v.Optional {
			spec += ":optional"
		}
		args = append(args, "-volume", spec)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = killAfter
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start projector: %w", err)
	}
	k := &Kubelet{
		cmd:         cmd,
		projections: make(chan Projection),
		errs:        make(chan error),
		stop:        make(chan struct{}),
		scanned:     make(chan struct{}),
		pumped:      make(chan struct{}),
	}
	lines := make(chan any)
	go k.scan(out, lines)
	go k.pump(lines)
	return k, nil
}

// Projections returns the volume writes, in the order the projector made
// them. Nothing is lost while the caller does not read: they queue up. The
// channel is closed when the projector has exited and every write before it
// was received, or on Close.
func (k *Kubelet) Projections() <-chan Projection { return k.projections }

// Errors returns the projector's errors (a failed watch or write; it keeps
// going), queued and closed like Projections.
func (k *Kubelet) Errors() <-chan error { return k.errs }

// Close stops the projector with SIGTERM, killing it if it has not exited
// after 10 seconds, and returns an error unless it exited successfully.
// Projections and errors not yet received are dropped.
func (k *Kubelet) Close() error {
	k.closeOnce.Do(func() {
		close(k.stop)
		if err := k.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			k.closeErr = fmt.Errorf("stop projector: %w", err)
		}
		kill := time.AfterFunc(killAfter, func() { _ = k.cmd.Process.Kill() })
		<-k.scanned
		err := k.cmd.Wait()
		kill.Stop()
		<-k.pumped
		// Wait reports the context's error when ctx stopped the projector,
		// even though it then exited successfully.
		if err != nil && (k.cmd.ProcessState == nil || !k.cmd.ProcessState.Success()) {
			k.closeErr = errors.Join(k.closeErr, fmt.Errorf("projector: %w", err))
		}
	})
	return k.closeErr
}

// scan parses the projector's stdout into Projections and errors on lines
// until EOF, discarding them once Close was called.
func (k *Kubelet) scan(out io.Reader, lines chan<- any) {
	defer close(k.scanned)
	defer close(lines)
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		select {
		case lines <- parseLine(sc.Text()):
		case <-k.stop:
		}
	}
	if err := sc.Err(); err != nil {
		select {
		case lines <- fmt.Errorf("read projector output: %w", err):
		case <-k.stop:
		}
		// Keep the projector from blocking on a full pipe.
		_, _ = io.Copy(io.Discard, out)
	}
}

// pump queues what scan parses and delivers it to the Projections and
// Errors channels, closing them when everything is delivered after the
// projector exited, or when Close is called.
func (k *Kubelet) pump(lines <-chan any) {
	defer close(k.pumped)
	defer close(k.projections)
	defer close(k.errs)
	var ps []Projection
	var es []error
	for lines != nil || len(ps) > 0 || len(es) > 0 {
		var (
			pc chan<- Projection
			p  Projection
			ec chan<- error
			e  error
		)
		if len(ps) > 0 {
			pc, p = k.projections, ps[0]
		}
		if len(es) > 0 {
			ec, e = k.errs, es[0]
		}
		select {
		case l, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			switch l := l.(type) {
			case Projection:
				ps = append(ps, l)
			case error:
				es = append(es, l)
			}
		case pc <- p:
			ps = ps[1:]
		case ec <- e:
			es = es[1:]
		case <-k.stop:
			return
		}
	}
}

// parseLine parses one line of the projector's output: a Projection for
// "projected KIND NAME RV START END", else an error.
func parseLine(line string) any {
	if msg, ok := strings.CutPrefix(line, "error "); ok {
		return errors.New("projector: " + msg)
	}
	f := strings.Fields(line)
	if len(f) != 6 || f[0] != "projected" {
		return fmt.Errorf("projector: unexpected output %q", line)
	}
	start, err1 := strconv.ParseInt(f[4], 10, 64)
	end, err2 := strconv.ParseInt(f[5], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("projector: unexpected output %q: %w", line, err)
	}
	p := Projection{Kind: f[1], Name: f[2], ResourceVersion: f[3], Start: time.Unix(0, start), End: time.Unix(0, end)}
	if p.ResourceVersion == "-" {
		p.ResourceVersion = ""
	}
	return p
}

// OpenKubelet starts a Kubelet that stops when the test ends; it fails the
// test when the projector cannot start or does not exit cleanly.
func OpenKubelet(t testing.TB, kubeconfig, namespace string, volumes []KubeletVolume) *Kubelet {
	t.Helper()
	k, err := StartKubelet(context.Background(), kubeconfig, namespace, volumes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := k.Close(); err != nil {
			t.Errorf("kubelet: %v", err)
		}
	})
	return k
}
