// Package projector is for tests only: it drives the kubelet volume
// projector built by the tools module (bin/projector), so tests update
// Secret and ConfigMap style volumes with the kubelet's own atomic writer
// rather than an imitation of it, either directly (Projector) or as a
// kubelet watching their objects through an API server (Kubelet).
package projector

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// Projector writes file sets into one volume directory the way the kubelet
// does: a new ..<timestamp> directory, then an atomic swap of ..data.
type Projector struct {
	dst, src string
	cmd      *exec.Cmd
	in       io.WriteCloser
	out      *bufio.Scanner
	mu       sync.Mutex
	n        int
}

// Start runs the projector for the volume directory dst, using scratch as
// room for the file sets it is given.
func Start(ctx context.Context, dst, scratch string) (*Projector, error) {
	bin, err := toolbin.Path("projector")
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "-dst", dst, "-stdin")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start projector: %w", err)
	}
	return &Projector{dst: dst, src: scratch, cmd: cmd, in: in, out: bufio.NewScanner(out)}, nil
}

// Project replaces the volume's content with files (name to content) and
// returns when the kubelet writer has finished, with the time it finished.
func (p *Projector) Project(files map[string]string) (time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	src := filepath.Join(p.src, strconv.Itoa(p.n))
	if err := os.MkdirAll(src, 0o755); err != nil {
		return time.Time{}, err
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			return time.Time{}, err
		}
	}
	if _, err := fmt.Fprintln(p.in, src); err != nil {
		return time.Time{}, fmt.Errorf("projector: %w", err)
	}
	if !p.out.Scan() {
		if err := p.out.Err(); err != nil {
			return time.Time{}, fmt.Errorf("projector exited: %w", err)
		}
		return time.Time{}, errors.New("projector exited")
	}
	f := strings.Fields(p.out.Text())
	if len(f) != 3 || f[0] != "ok" {
		return time.Time{}, errors.New("projector: " + p.out.Text())
	}
	end, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("projector: %q: %w", p.out.Text(), err)
	}
	return time.Unix(0, end), os.RemoveAll(src)
}

// Close stops the projector.
func (p *Projector) Close() error {
	_ = p.in.Close()
	return p.cmd.Wait()
}

// Open starts a projector for the volume directory dst that stops when the
// test ends; it fails the test when the projector cannot start.
func Open(t testing.TB, dst string) *Projector {
	t.Helper()
	p, err := Start(context.Background(), dst, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("projector for %s: %v", dst, err)
		}
	})
	return p
}

// Set replaces the volume's content with files, failing the test on error.
func (p *Projector) Set(t testing.TB, files map[string]string) {
	t.Helper()
	if _, err := p.Project(files); err != nil {
		t.Fatal(err)
	}
}
