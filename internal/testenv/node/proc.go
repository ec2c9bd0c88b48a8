package node

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// tailLines is how many of its last log lines a failure of a component shows.
const tailLines = 25

// component is one process of the node, in the node's network namespace,
// its output in logs/<name>.log.
type component struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // how it exited, once done is closed
}

// startComponent runs bin with args in the network namespace netns (the
// host's when empty), with binDir first in its PATH (containerd finds its
// shim there).
func startComponent(logDir, binDir, netns, name, bin string, args ...string) (*component, error) {
	c := &component{name: name, log: filepath.Join(logDir, name+".log"), done: make(chan struct{})}
	f, err := os.OpenFile(c.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if netns != "" {
		// nsenter execs bin: the process is the component's, in the
		// namespace, and shares the host's mount namespace (the kubelet's
		// mounts must be containerd's).
		args = append([]string{"--net=" + netnsPath(netns), "--", bin}, args...)
		bin = "nsenter"
	}
	c.cmd = exec.Command(bin, args...)
	c.cmd.Stdout, c.cmd.Stderr = f, f
	c.cmd.Env = append(os.Environ(), "PATH="+binDir+":"+os.Getenv("PATH"))
	// Its own process group, so that a Ctrl-C in a terminal reaches the
	// test (which stops the node in order), not the components at random;
	// killed with the process that started it (Pdeathsig), whatever else
	// happens.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// exited returns an error naming the component, with its last log lines,
// if it has exited.
func (c *component) exited() error {
	select {
	case <-c.done:
		if c.err == nil {
			return c.failure(errors.New("exited"))
		}
		return c.failure(fmt.Errorf("exited: %w", c.err))
	default:
		return nil
	}
}

// failure wraps err with the component's name and last log lines.
func (c *component) failure(err error) error {
	return fmt.Errorf("%s: %w\n--- last lines of %s ---\n%s", c.name, err, c.log, tail(c.log, tailLines))
}

// stop sends SIGTERM, then SIGKILL after grace, and waits for the exit.
func (c *component) stop(grace time.Duration) {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// run runs a short command (ip, ctr, iptables), its output in the error.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
