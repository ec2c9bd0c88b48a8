// Command benchreload benchmarks config reloaders from the outside, as
// processes, the way they run in a pod: it projects a gzipped Prometheus
// configuration and a rules directory with the kubelet's own atomic writer
// (k8s.io/kubernetes/pkg/volume/util), starts each reloader on them at its
// defaults (config-reloader, prometheus-config-reloader, rules-reloader),
// swaps the volumes as the kubelet does, and serves the reload endpoint the
// reloader calls.
//
// A swap's time is when the harness's inotify watch sees the kubelet's ..data
// symlink renamed into place (or when the write returned, if earlier). A
// reload's time is when its request reaches the endpoint, which at that
// moment reads the configuration and where the rules volume's ..data points
// (each published directory's files are checked against their state before
// the next swap), as the reloaded process would, to tell which swap's state
// the reload reflects. The
// configuration is the rendered output file, or for a reloader that does not
// render, the config volume's file gunzipped with $(POD_NAME) substituted.
//
// Usage (from tools/):
//
//	go run ./benchreload [-bin DIR] [-out DIR] [-quick] [-v]
//
// It rewrites the section between <!-- reloaders:begin --> and
// <!-- reloaders:end --> of OUT/benchmarks.md and OUT/reload-latency.png.
// -quick is a smoke run with small counts that prints the section instead,
// unless -out is given.
package main

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	volumeutil "k8s.io/kubernetes/pkg/volume/util"
)

const (
	podName    = "prometheus-bench-0"
	configName = "prometheus.yaml.gz"
	outputName = "prometheus.env.yaml"
	dataLink   = "..data" // the kubelet's published symlink
	clockTick  = 10 * time.Millisecond
	burstSize  = 10
	burstGap   = 20 * time.Millisecond
	// afterWork is how long a reloader may go on working after a reload
	// before it counts as idle: ours return freed memory to the OS and drop
	// code pages 2 s after their last work.
	afterWork = 5 * time.Second
	// endpoint stands for the harness's reload endpoint in spec.args.
	endpoint = "http://127.0.0.1:PORT/-/reload"
)

// options are the command-line flags.
type options struct {
	ours, peer, rules, out   string
	floor                    string
	n20, n2000, bursts, nCfg int
	idle, timeout            time.Duration
	quick, write, verbose    bool
}

// spec is one reloader under test.
type spec struct {
	name, bin string
	// args are its arguments; CFGVOL, RULESVOL and OUT stand for the config
	// volume, the rules volume and the directory of the rendered
	// configuration, endpoint for the harness's reload endpoint.
	args []string
	// renders is whether it writes the configuration to OUT/outputName.
	// Otherwise the reloaded process is taken to read the config volume.
	renders bool
	// settle is how long no reload may arrive before a swap's reloads are
	// taken as complete: the reloader's own coalescing delay plus 0.5 s.
	settle time.Duration
}

func main() { os.Exit(run()) }

func run() int {
	root := repoRoot()
	var o options
	bin := flag.String("bin", filepath.Join(root, "bin"), "directory holding the reloaders")
	flag.StringVar(&o.ours, "ours", "", "our config reloader (default BIN/config-reloader)")
	flag.StringVar(&o.peer, "peer", "", "the peer (default BIN/prometheus-config-reloader)")
	flag.StringVar(&o.rules, "rules", "", "our drop-in for configmap-reload (default BIN/rules-reloader)")
	flag.StringVar(&o.floor, "floor", "", "the sidecars' libraries alone (default BIN/memfloor)")
	flag.StringVar(&o.out, "out", filepath.Join(root, "docs"), "directory receiving benchmarks.md and reload-latency.png")
	flag.IntVar(&o.n20, "n20", 100, "single swaps with 20 rule files")
	flag.IntVar(&o.n2000, "n2000", 30, "single swaps with 2,000 rule files")
	flag.IntVar(&o.bursts, "bursts", 5, "bursts of 10 swaps")
	flag.IntVar(&o.nCfg, "nconfig", 20, "swaps of the config volume")
	flag.DurationVar(&o.idle, "idle", 10*time.Second, "idle period for RSS and CPU")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Second, "longest wait for the reload reflecting a swap")
	flag.BoolVar(&o.quick, "quick", false, "smoke run with small counts; prints the markdown unless -out is given")
	flag.BoolVar(&o.verbose, "v", false, "log every swap's reloads")
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o.write = !o.quick || set["out"]
	for name, q := range map[string]*int{"n20": &o.n20, "n2000": &o.n2000, "bursts": &o.bursts, "nconfig": &o.nCfg} {
		if o.quick && !set[name] {
			*q = max(2, *q/10)
		}
	}
	if o.quick && !set["idle"] {
		o.idle = 2 * time.Second
	}
	configArgs := []string{"--config-file=CFGVOL/" + configName, "--config-envsubst-file=OUT/" + outputName,
		"--watched-dir=RULESVOL", "--reload-url=" + endpoint}
	// The order is report's.
	specs := []spec{{
		name: "config-reloader (ours)", bin: cmp.Or(o.ours, filepath.Join(*bin, "config-reloader")),
		args: configArgs, renders: true, settle: 500 * time.Millisecond,
	}, {
		name: "prometheus-config-reloader", bin: cmp.Or(o.peer, filepath.Join(*bin, "prometheus-config-reloader")),
		args: configArgs, renders: true, settle: 1500 * time.Millisecond,
	}, {
		name: "rules-reloader (ours)", bin: cmp.Or(o.rules, filepath.Join(*bin, "rules-reloader")),
		args:    []string{"--volume-dir=RULESVOL", "--volume-dir=CFGVOL", "--webhook-url=" + endpoint, "--web.listen-address="},
		renders: false, settle: 500 * time.Millisecond,
	}}
	o.floor = cmp.Or(o.floor, filepath.Join(*bin, "memfloor"))
	for _, bin := range []string{specs[0].bin, specs[1].bin, specs[2].bin, o.floor} {
		if _, err := os.Stat(bin); err != nil {
			fmt.Fprintf(os.Stderr, "benchreload: %v (build them with `make build bin/prometheus-config-reloader bin/memfloor`)\n", err)
			return 2
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	load := loadAvg()
	var results []*result
	for _, s := range specs {
		r, err := measure(ctx, s, o)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchreload: %s: %v\n", s.name, err)
			return 1
		}
		results = append(results, r)
	}
	floor, err := memFloor(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchreload: %v\n", err)
		return 1
	}
	section := report(results, floor, o, root, load+" at the start, "+loadAvg()+" at the end")
	if !o.write {
		fmt.Print(section)
		return 0
	}
	md := filepath.Join(o.out, "benchmarks.md")
	if err := errors.Join(writeSection(md, section), plotLatency(filepath.Join(o.out, "reload-latency.png"), results)); err != nil {
		fmt.Fprintf(os.Stderr, "benchreload: %v\n", err)
		return 1
	}
	logf("wrote %s and reload-latency.png", md)
	return 0
}

// result holds one reloader's measurements.
type result struct {
	spec
	version            string
	lat20, lat2000     []time.Duration
	single20, single2k swaps
	burstReloads       []int
	burstLastApplied   int
	cfgLat             []time.Duration
	cfgSwaps           int
	idleRSS, idleAnon  int64 // KiB
	idleCPU            time.Duration
	idleReloads        int
	// workedRSS and workedAnon are sampled o.idle after scenarios 1, 3 and
	// 4: the Go runtime keeps more after many collections than after one.
	workedRSS, workedAnon int64 // KiB
	peak2000, peakAnon    int64 // KiB: VmHWM, highest RssAnon sampled
}

// swaps sums up single swaps.
type swaps struct {
	n, reloads, exactlyOne, stale, missed int
	writes                                []time.Duration // from the start of each atomic write to its rename
}

// measure runs every scenario against one reloader: one process with 20
// rule files (idle, single swaps, bursts, config swaps), then a fresh one
// with 2,000 (single swaps, peak RSS).
func measure(ctx context.Context, s spec, o options) (*result, error) {
	r := &result{spec: s, version: binaryVersion(s.bin), cfgSwaps: o.nCfg}
	err := withBench(ctx, s, 20, o, func(b *bench) error {
		logf("%s, 20 files: %s idle, %d single swaps, %d bursts, %d config swaps", s.name, o.idle, o.n20, o.bursts, o.nCfg)
		if err := sleep(ctx, afterWork); err != nil {
			return err
		}
		n0, cpu0 := b.count(), cpuTime(b.pid())
		if err := sleep(ctx, o.idle); err != nil {
			return err
		}
		r.idleCPU, r.idleReloads = cpuTime(b.pid())-cpu0, b.count()-n0
		st := procStatus(b.pid())
		r.idleRSS, r.idleAnon = st["VmRSS"], st["RssAnon"]

		var err error
		if r.lat20, r.single20, err = b.singleSwaps(ctx, o.n20); err != nil {
			return err
		}
		for range o.bursts {
			n, last, err := b.burst(ctx)
			if err != nil {
				return err
			}
			r.burstReloads = append(r.burstReloads, n)
			if last {
				r.burstLastApplied++
			}
		}
		for range o.nCfg {
			from := b.count()
			at, k, err := b.swap(b.cfg, nextConfig)
			if err != nil {
				return err
			}
			rl, ok, err := b.settle(ctx, from, func(rl reload) bool { return rl.cfg == k })
			if err != nil {
				return err
			} else if ok {
				r.cfgLat = append(r.cfgLat, rl.at.Sub(at))
			}
		}
		if err := sleep(ctx, o.idle); err != nil {
			return err
		}
		st = procStatus(b.pid())
		r.workedRSS, r.workedAnon = st["VmRSS"], st["RssAnon"]
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = withBench(ctx, s, 2000, o, func(b *bench) error {
		logf("%s, 2,000 files: %d single swaps", s.name, o.n2000)
		var err error
		r.lat2000, r.single2k, err = b.singleSwaps(ctx, o.n2000)
		r.peak2000, r.peakAnon = procStatus(b.pid())["VmHWM"], b.maxAnon()
		return err
	})
	return r, err
}

// floor is the idle memory of memfloor, which links the sidecars' libraries
// and does nothing else, after a number of collections.
type floor struct {
	collections [2]int
	anon        [2]int64 // KiB
}

// memFloor runs memfloor twice at once and samples each o.idle after its
// start: after one collection, as a sidecar after its start-up, and after
// ten, enough for the runtime to reach its steady state.
func memFloor(ctx context.Context, o options) (floor, error) {
	f := floor{collections: [2]int{1, 10}}
	logf("memfloor: %s idle", o.idle)
	var cmds [2]*exec.Cmd
	for i, n := range f.collections {
		cmds[i] = exec.Command(o.floor, strconv.Itoa(n))
		cmds[i].Env = []string{"GOMAXPROCS=1"} // as the sidecars run
		if err := cmds[i].Start(); err != nil {
			return f, err
		}
		defer func() { _ = cmds[i].Process.Kill(); _ = cmds[i].Wait() }()
	}
	if err := sleep(ctx, o.idle); err != nil {
		return f, err
	}
	for i, c := range cmds {
		st := procStatus(c.Process.Pid)
		if st["RssAnon"] == 0 {
			return f, fmt.Errorf("memfloor %d: not running", f.collections[i])
		}
		f.anon[i] = st["RssAnon"]
	}
	return f, nil
}

// reload is one request received by the reload endpoint, with the states of
// the config and rules volumes it reflects (-1: none the harness wrote).
type reload struct {
	at         time.Time
	cfg, rules int
	target     string // where the rules volume's ..data pointed
}

// volume is a kubelet-projected volume and the states the harness wrote.
type volume struct {
	dir       string
	w         *volumeutil.AtomicWriter
	files     map[string][]byte
	state     int              // the latest
	states    map[[32]byte]int // by the hash of what the process reads in it
	dirs      map[string]int   // by the directory ..data points to
	wd        int              // its inotify watch
	published chan time.Time   // when ..data was renamed into place
}

// bench is a pod-like setup around one reloader process.
type bench struct {
	spec
	o          options
	cfg, rules *volume
	output     string // the rendered configuration
	inotify    int    // the fd watching both volumes
	arrived    chan struct{}
	cmd        *exec.Cmd
	exited     chan struct{}
	writeStart time.Time // of the last swap

	mu       sync.Mutex // guards what follows and the volumes' states
	reloads  []reload
	peakAnon int64 // KiB
}

// withBench sets up volumes, endpoint and reloader, waits for the start-up
// reload and runs f; it stops the reloader and removes everything afterwards.
func withBench(ctx context.Context, s spec, nfiles int, o options, f func(*bench) error) (err error) {
	dir, err := os.MkdirTemp("", "benchreload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b := &bench{spec: s, o: o, output: filepath.Join(dir, "out", outputName), arrived: make(chan struct{}, 1), exited: make(chan struct{})}
	if b.inotify, err = unix.InotifyInit1(unix.IN_CLOEXEC); err != nil {
		return err
	}
	defer unix.Close(b.inotify)
	if b.cfg, err = b.newVolume(filepath.Join(dir, "config")); err != nil {
		return err
	}
	if b.rules, err = b.newVolume(filepath.Join(dir, "rules")); err != nil {
		return err
	}
	watching := make(chan struct{})
	go b.watch(watching)
	defer func() {
		for _, v := range []*volume{b.cfg, b.rules} {
			_, _ = unix.InotifyRmWatch(b.inotify, uint32(v.wd)) // It wakes watch up.
		}
		<-watching
	}()
	if _, _, err := b.swap(b.cfg, nextConfig); err != nil {
		return err
	}
	if _, _, err := b.swap(b.rules, func(files map[string][]byte, _ int) [32]byte {
		for i := range nfiles {
			files[fmt.Sprintf("rules-%04d.yaml", i)] = ruleFile(i, 0)
		}
		return hashFiles(files)
	}); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(b.output), 0o755); err != nil {
		return err
	}

	srv := httptest.NewServer(b)
	defer srv.Close()
	placeholders := strings.NewReplacer("CFGVOL", b.cfg.dir, "RULESVOL", b.rules.dir, "OUT", filepath.Dir(b.output),
		endpoint, srv.URL+"/-/reload")
	args := make([]string, len(s.args))
	for i, a := range s.args {
		args[i] = placeholders.Replace(a)
	}
	b.cmd = exec.Command(s.bin, args...)
	b.cmd.Env = []string{"POD_NAME=" + podName, "PATH=" + os.Getenv("PATH")}
	log, err := os.Create(filepath.Join(dir, "reloader.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	b.cmd.Stdout, b.cmd.Stderr = log, log
	// Its own process group, so that stop also ends any child (of a wrapper, say).
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := b.cmd.Start(); err != nil {
		return err
	}
	go func() { _ = b.cmd.Wait(); close(b.exited) }()
	go b.sample()
	defer func() {
		b.stop()
		if err != nil {
			out, _ := os.ReadFile(log.Name())
			err = fmt.Errorf("%w; reloader log ends:\n%s", err, out[max(0, len(out)-2000):])
		}
	}()

	if _, ok, err := b.settle(ctx, 0, func(rl reload) bool { return rl.cfg == 0 && rl.rules == 0 }); err != nil || !ok {
		return cmp.Or(err, fmt.Errorf("no start-up reload within %s", o.timeout))
	}
	return f(b)
}

func (b *bench) newVolume(dir string) (*volume, error) {
	v := &volume{dir: dir, files: map[string][]byte{}, state: -1, states: map[[32]byte]int{}, dirs: map[string]int{}, published: make(chan time.Time, 16)}
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		v.wd, err = unix.InotifyAddWatch(b.inotify, dir, unix.IN_MOVED_TO)
	}
	if err == nil {
		v.w, err = volumeutil.NewAtomicWriter(dir, "benchreload")
	}
	return v, err
}

// watch records when the kubelet's ..data symlink is renamed into place. It
// blocks in read(2) on a thread of its own, to take the time as soon as the
// kernel wakes it, and returns once both watches are removed.
func (b *bench) watch(done chan<- struct{}) {
	defer close(done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, 64<<10)
	for live := 2; live > 0; {
		n, err := unix.Read(b.inotify, buf)
		now := time.Now()
		if err == unix.EINTR {
			continue
		} else if err != nil {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; { // struct inotify_event: wd, mask, cookie, len, name
			wd, mask := int(int32(binary.NativeEndian.Uint32(buf[off:]))), binary.NativeEndian.Uint32(buf[off+4:])
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(binary.NativeEndian.Uint32(buf[off+12:]))]
			off += unix.SizeofInotifyEvent + len(name)
			for _, v := range []*volume{b.cfg, b.rules} {
				if v.wd == wd && mask&unix.IN_IGNORED != 0 {
					live--
				} else if v.wd == wd && string(bytes.TrimRight(name, "\x00")) == dataLink {
					v.published <- now
				}
			}
		}
	}
}

// swap lets change edit the volume's files into its next state k and return
// the hash of what the process reads then, writes them as one atomic swap,
// and returns the swap's time.
func (b *bench) swap(v *volume, change func(files map[string][]byte, k int) [32]byte) (at time.Time, k int, err error) {
	if err := b.check(v); err != nil {
		return at, k, err
	}
	b.mu.Lock()
	v.state++
	k = v.state
	v.states[change(v.files, k)] = k
	b.mu.Unlock()
	payload := make(map[string]volumeutil.FileProjection, len(v.files))
	for name, data := range v.files {
		payload[name] = volumeutil.FileProjection{Data: data, Mode: 0o644}
	}
	b.writeStart = time.Now()
	if err := v.w.Write(payload, nil); err != nil {
		return at, k, fmt.Errorf("project %s: %w", v.dir, err)
	}
	written := time.Now()
	target, err := os.Readlink(filepath.Join(v.dir, dataLink))
	b.mu.Lock()
	v.dirs[target] = k
	b.mu.Unlock()
	select {
	case seen := <-v.published:
		if written.Before(seen) { // The watch was late.
			return written, k, err
		}
		return seen, k, err
	case <-time.After(2 * time.Second):
		return at, k, fmt.Errorf("no %s rename seen in %s", dataLink, v.dir)
	}
}

// check verifies, off the clock, that the directory ..data points to holds
// the files of the latest state: the endpoint then tells a state from the
// directory's name alone, without reading 2,000 files while the reloader works.
func (b *bench) check(v *volume) error {
	if v.state < 0 {
		return nil
	}
	target, err := os.Readlink(filepath.Join(v.dir, dataLink))
	if err != nil {
		return err
	}
	files, err := readDir(filepath.Join(v.dir, target))
	if err != nil {
		return fmt.Errorf("%s in %s does not hold state %d: %w", target, v.dir, v.state, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if k, ok := v.dirs[target]; !ok || k != v.state || !maps.EqualFunc(files, v.files, bytes.Equal) {
		return fmt.Errorf("%s in %s does not hold state %d", target, v.dir, v.state)
	}
	return nil
}

// nextConfig makes the configuration version k and returns the hash of its rendering.
func nextConfig(files map[string][]byte, k int) [32]byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "global:\n  scrape_interval: 30s\n  external_labels:\n    replica: $(POD_NAME)\n    bench_version: \"%d\"\nrule_files:\n- /etc/prometheus/rules/*.yaml\nscrape_configs:\n", k)
	for j := range 20 {
		fmt.Fprintf(&b, "- job_name: bench-%02d\n  static_configs:\n  - targets: ['10.0.0.%d:9100']\n", j, j+1)
	}
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	_, _ = w.Write(b.Bytes())
	_ = w.Close()
	files[configName] = z.Bytes()
	return sha256.Sum256(expandPodName(b.Bytes()))
}

// expandPodName substitutes $(POD_NAME) as the reloaders' rendering does.
func expandPodName(config []byte) []byte {
	return bytes.ReplaceAll(config, []byte("$(POD_NAME)"), []byte(podName))
}

// nextRules changes rule file (k-1) mod n to version k.
func nextRules(files map[string][]byte, k int) [32]byte {
	i := (k - 1) % len(files)
	files[fmt.Sprintf("rules-%04d.yaml", i)] = ruleFile(i, k)
	return hashFiles(files)
}

// ruleFile returns about 1 KiB of alerting rules for file i at version v.
func ruleFile(i, v int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "groups:\n- name: bench-%04d\n  rules:\n", i)
	for j := 0; b.Len() < 1000; j++ {
		fmt.Fprintf(&b, "  - alert: BenchAlert%04d_%02d\n    expr: up{job=\"bench-%04d\"} == 0\n    labels: {version: \"%d\"}\n", i, j, i, v)
	}
	return b.Bytes()
}

// ServeHTTP is the reload endpoint: it records the request and the states
// of what the reloaded process would read now.
func (b *bench) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	if r.URL.Path != "/-/reload" || r.Method != http.MethodPost {
		http.Error(w, "only POST /-/reload", http.StatusMethodNotAllowed)
		return
	}
	target, _ := os.Readlink(filepath.Join(b.rules.dir, dataLink))
	cfg, cfgErr := b.config()
	b.mu.Lock()
	rl := reload{at: at, cfg: -1, rules: -1, target: target}
	if k, ok := b.cfg.states[sha256.Sum256(cfg)]; ok && cfgErr == nil {
		rl.cfg = k
	}
	b.reloads = append(b.reloads, rl)
	b.mu.Unlock()
	select {
	case b.arrived <- struct{}{}:
	default:
	}
}

// config returns the configuration the reloaded process would read: the
// rendered output, or, from a reloader that does not render, the config
// volume's, gunzipped and with $(POD_NAME) substituted.
func (b *bench) config() ([]byte, error) {
	if b.renders {
		return os.ReadFile(b.output)
	}
	files, err := readVolume(b.cfg.dir, "")
	if err != nil {
		return nil, err
	}
	z, err := gzip.NewReader(bytes.NewReader(files[configName]))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", configName, err)
	}
	plain, err := io.ReadAll(z)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", configName, err)
	}
	return expandPodName(plain), nil
}

// singleSwaps swaps one rule file n times, each once the previous swap's
// reloads are over, and returns the latencies.
func (b *bench) singleSwaps(ctx context.Context, n int) ([]time.Duration, swaps, error) {
	var lat []time.Duration
	s := swaps{n: n}
	for range n {
		from := b.count()
		at, k, err := b.swap(b.rules, nextRules)
		if err != nil {
			return nil, s, err
		}
		rl, ok, err := b.settle(ctx, from, func(rl reload) bool { return rl.rules == k })
		if err != nil {
			return nil, s, err
		}
		if ok {
			lat = append(lat, rl.at.Sub(at))
		} else {
			s.missed++
		}
		window := b.since(from)
		s.writes = append(s.writes, at.Sub(b.writeStart))
		b.logWindow(fmt.Sprintf("swap %d (write began %s before the rename)", k, at.Sub(b.writeStart).Round(time.Microsecond)), at, window)
		s.reloads += len(window)
		if len(window) == 1 {
			s.exactlyOne++
		}
		for _, rl := range window {
			if rl.rules != k {
				s.stale++
			}
		}
	}
	return lat, s, nil
}

// burst makes burstSize swaps burstGap apart and returns how many reloads
// followed and whether the last one reflects the last swap.
func (b *bench) burst(ctx context.Context) (int, bool, error) {
	from, start, k := b.count(), time.Now(), 0
	for i := range burstSize {
		if err := sleep(ctx, time.Until(start.Add(time.Duration(i)*burstGap))); err != nil {
			return 0, false, err
		}
		var err error
		if _, k, err = b.swap(b.rules, nextRules); err != nil {
			return 0, false, err
		}
	}
	if _, _, err := b.settle(ctx, from, func(rl reload) bool { return rl.rules == k }); err != nil {
		return 0, false, err
	}
	window := b.since(from)
	b.logWindow(fmt.Sprintf("burst to %d", k), start, window)
	return len(window), len(window) > 0 && window[len(window)-1].rules == k, nil
}

// settle waits, up to the timeout, for a reload since index from that
// matches, then until no reload has arrived for the reloader's settle time.
func (b *bench) settle(ctx context.Context, from int, match func(reload) bool) (found reload, ok bool, err error) {
	deadline := time.After(b.o.timeout)
wait:
	for {
		rs := b.since(from)
		if i := slices.IndexFunc(rs, match); i >= 0 {
			found, ok = rs[i], true
			break
		}
		select {
		case <-b.arrived:
		case <-deadline:
			break wait
		case <-b.exited:
			return found, false, errors.New("reloader exited")
		case <-ctx.Done():
			return found, false, ctx.Err()
		}
	}
	quiet := time.NewTimer(b.spec.settle)
	defer quiet.Stop()
	for {
		select {
		case <-b.arrived:
			quiet.Reset(b.spec.settle)
		case <-quiet.C:
			return found, ok, nil
		case <-b.exited:
			return found, ok, errors.New("reloader exited")
		case <-ctx.Done():
			return found, ok, ctx.Err()
		}
	}
}

// sample records the reloader's highest RssAnon every 20 ms until it exits.
func (b *bench) sample() {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		anon := procStatus(b.pid())["RssAnon"]
		b.mu.Lock()
		b.peakAnon = max(b.peakAnon, anon)
		b.mu.Unlock()
		select {
		case <-t.C:
		case <-b.exited:
			return
		}
	}
}

func (b *bench) maxAnon() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peakAnon
}

func (b *bench) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.reloads)
}

// since returns the reloads from index from on, with the rules state each
// reflects, known by then.
func (b *bench) since(from int) []reload {
	b.mu.Lock()
	defer b.mu.Unlock()
	rs := slices.Clone(b.reloads[from:])
	for i, r := range rs {
		if k, ok := b.rules.dirs[r.target]; ok {
			rs[i].rules = k
		}
	}
	return rs
}

// logWindow logs, with -v, reloads relative to t with the states they reflect.
func (b *bench) logWindow(what string, t time.Time, rs []reload) {
	if !b.o.verbose {
		return
	}
	var s strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&s, " %+.2fms cfg=%d rules=%d;", float64(r.at.Sub(t))/1e6, r.cfg, r.rules)
	}
	logf("%s: %d reloads:%s", what, len(rs), s.String())
}

func (b *bench) pid() int { return b.cmd.Process.Pid }

// stop terminates the reloader's process group, killing it if the reloader
// ignores SIGTERM.
func (b *bench) stop() {
	_ = syscall.Kill(-b.pid(), syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-b.pid(), syscall.SIGKILL)
		<-b.exited
	}
	_ = syscall.Kill(-b.pid(), syscall.SIGKILL) // Whatever is left in the group.
}

// readVolume reads the files a process sees in a kubelet volume, all from
// the same published directory: target, where ..data pointed, or if the
// kubelet has removed it meanwhile, where it points now.
func readVolume(vol, target string) (files map[string][]byte, err error) {
	for range 5 {
		if target == "" {
			if target, err = os.Readlink(filepath.Join(vol, dataLink)); err != nil {
				continue
			}
		}
		if files, err = readDir(filepath.Join(vol, target)); err == nil {
			return files, nil
		}
		target = ""
	}
	return nil, err
}

func readDir(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	files := make(map[string][]byte, len(entries))
	for _, e := range entries {
		if err == nil {
			files[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name()))
		}
	}
	return files, err
}

// hashFiles hashes file names and contents, independently of map order.
func hashFiles(files map[string][]byte) [32]byte {
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(files[name]))
		h.Write(files[name])
	}
	return [32]byte(h.Sum(nil))
}

// procStatus returns the kB fields of /proc/PID/status, in KiB.
func procStatus(pid int) map[string]int64 {
	fields := map[string]int64{}
	for line := range strings.Lines(readTrim(fmt.Sprintf("/proc/%d/status", pid))) {
		name, value, _ := strings.Cut(line, ":")
		if v, unit, ok := strings.Cut(strings.TrimSpace(value), " "); ok && unit == "kB" {
			fields[name], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return fields
}

// cpuTime returns utime+stime from /proc/PID/stat.
func cpuTime(pid int) time.Duration {
	_, rest, _ := strings.Cut(readTrim(fmt.Sprintf("/proc/%d/stat", pid)), ") ") // after the command name
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * clockTick
}

func loadAvg() string { return cmp.Or(strings.Fields(readTrim("/proc/loadavg"))...) }

func readTrim(path string) string {
	data, _ := os.ReadFile(path)
	return strings.TrimSpace(string(data))
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// repoRoot returns the nearest directory up from the working directory
// holding the main module's go.mod, or the working directory.
func repoRoot() string {
	wd, _ := os.Getwd()
	for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.HasPrefix(data, []byte("module github.com/podreload/podreload\n")) {
			return d
		}
	}
	return wd
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}
