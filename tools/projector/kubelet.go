package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	volumeutil "k8s.io/kubernetes/pkg/volume/util"
)

const (
	// fileMode is the kubelet's default mode for Secret and ConfigMap
	// volume files (defaultMode unset).
	fileMode = 0o644
	// minRetry and maxRetry bound the backoff between attempts to write a
	// volume whose last write failed.
	minRetry = 100 * time.Millisecond
	maxRetry = 10 * time.Second
	// stopGrace bounds the wait for the watches to stop on SIGTERM.
	stopGrace = time.Second
)

// volume is one -volume flag: a Secret or ConfigMap projected into dir.
type volume struct {
	kind     string // "secret" or "configmap"
	name     string
	dir      string
	optional bool
}

// parseVolume parses KIND:NAME:DIR[:optional].
func parseVolume(s string) (volume, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok || (kind != "secret" && kind != "configmap") {
		return volume{}, fmt.Errorf("volume %q: want secret:NAME:DIR or configmap:NAME:DIR, optionally followed by :optional", s)
	}
	name, dir, ok := strings.Cut(rest, ":")
	if !ok || name == "" || dir == "" {
		return volume{}, fmt.Errorf("volume %q: want %s:NAME:DIR[:optional]", s, kind)
	}
	v := volume{kind: kind, name: name, dir: dir}
	if d, found := strings.CutSuffix(dir, ":optional"); found && d != "" {
		v.dir, v.optional = d, true
	}
	return v, nil
}

// output serializes the result lines of all volumes on stdout.
type output struct {
	mu sync.Mutex
	w  io.Writer
}

func (o *output) projected(v volume, rv string, start, end time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.w, "projected %s %s %s %d %d\n", v.kind, v.name, rv, start.UnixNano(), end.UnixNano())
}

func (o *output) error(err error) {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.w, "error %s\n", msg)
	fmt.Fprintln(os.Stderr, "projector:", msg)
}

// runKubelet watches each volume's object in namespace and projects it the
// way the kubelet does, until SIGTERM or SIGINT. It returns the exit code.
func runKubelet(kubeconfig, namespace string, volumes []volume) int {
	// Before the volume directories exist, so a test that sees them can
	// stop the projector cleanly.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "projector: load kubeconfig %s: %v\n", kubeconfig, err)
		return 2
	}
	cfg.UserAgent = "projector"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "projector: client for %s: %v\n", kubeconfig, err)
		return 2
	}

	out := &output{w: os.Stdout}
	watchers := make([]*watcher, 0, len(volumes))
	for _, v := range volumes {
		w, err := newWatcher(client, namespace, v, out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "projector:", err)
			return 1
		}
		watchers = append(watchers, w)
	}

	var informers, writers sync.WaitGroup
	for _, w := range watchers {
		informers.Go(func() { w.informer.RunWithContext(ctx) })
		writers.Go(func() { w.run(ctx) })
	}
	writers.Wait()
	// While the API server is unreachable, the reflector's watch-list
	// backoff (up to 30 s) does not end with ctx: wait for the informers
	// only so long, since nothing is written without the writers.
	stopped := make(chan struct{})
	go func() {
		informers.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(stopGrace):
	}
	return 0
}

// watcher projects one volume: an informer restricted to the one object
// (as the kubelet's watch-based ConfigMap and Secret managers do) pokes a
// loop that writes the object's current state, so bursts coalesce and the
// last state is always the one written.
type watcher struct {
	vol      volume
	key      string // namespace/name in the informer's store
	informer cache.SharedIndexInformer
	writer   *volumeutil.AtomicWriter
	out      *output
	dirty    chan struct{}
}

func newWatcher(client kubernetes.Interface, namespace string, v volume, out *output) (*watcher, error) {
	if err := os.MkdirAll(v.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create volume directory: %w", err)
	}
	writer, err := volumeutil.NewAtomicWriter(v.dir, v.kind+" "+v.name)
	if err != nil {
		return nil, fmt.Errorf("atomic writer for %s: %w", v.dir, err)
	}
	resource, example := "secrets", runtime.Object(&corev1.Secret{})
	if v.kind == "configmap" {
		resource, example = "configmaps", &corev1.ConfigMap{}
	}
	lw := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), resource, namespace,
		fields.OneTermEqualSelector("metadata.name", v.name))
	w := &watcher{
		vol:      v,
		key:      namespace + "/" + v.name,
		informer: cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{}),
		writer:   writer,
		out:      out,
		dirty:    make(chan struct{}, 1),
	}
	poke := func() {
		select {
		case w.dirty <- struct{}{}:
		default:
		}
	}
	if _, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}); err != nil {
		return nil, fmt.Errorf("watch %s %s: %w", v.kind, v.name, err)
	}
	if err := w.informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		// A closed or expired watch is routine: the reflector resumes it.
		if errors.Is(err, io.EOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return
		}
		out.error(fmt.Errorf("watch %s %s/%s: %w", v.kind, namespace, v.name, err))
	}); err != nil {
		return nil, fmt.Errorf("watch %s %s: %w", v.kind, v.name, err)
	}
	return w, nil
}

// run writes the volume once the informer has listed the object, then after
// every change, until ctx is done. A failed write is retried with backoff.
func (w *watcher) run(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-w.informer.HasSyncedChecker().Done():
	}
	retry := time.NewTimer(maxRetry)
	retry.Stop()
	defer retry.Stop()
	backoff := minRetry
	for {
		if err := w.sync(); err != nil {
			w.out.error(err)
			retry.Reset(backoff)
			backoff = min(2*backoff, maxRetry)
		} else {
			retry.Stop()
			backoff = minRetry
		}
		select {
		case <-ctx.Done():
			return
		case <-w.dirty:
		case <-retry.C:
		}
	}
}

// sync writes the object's current state: all its keys when it exists, an
// empty directory when an optional object is absent, and nothing (the last
// content stays) when a required one is.
func (w *watcher) sync() error {
	obj, exists, err := w.informer.GetStore().GetByKey(w.key)
	if err != nil {
		return fmt.Errorf("read %s %s from the cache: %w", w.vol.kind, w.key, err)
	}
	if !exists && !w.vol.optional {
		return nil
	}
	payload := map[string]volumeutil.FileProjection{}
	rv := "-"
	switch o := obj.(type) {
	case *corev1.Secret:
		rv = o.ResourceVersion
		for k, v := range o.Data {
			payload[k] = volumeutil.FileProjection{Data: v, Mode: fileMode}
		}
	case *corev1.ConfigMap:
		rv = o.ResourceVersion
		for k, v := range o.Data {
			payload[k] = volumeutil.FileProjection{Data: []byte(v), Mode: fileMode}
		}
		for k, v := range o.BinaryData {
			payload[k] = volumeutil.FileProjection{Data: v, Mode: fileMode}
		}
	}

	// Write skips an unchanged payload without saying so; a write always
	// points ..data at a new timestamped directory. A write that fails
	// after the swap is still reported as a projection.
	data := filepath.Join(w.vol.dir, "..data")
	before, _ := os.Readlink(data)
	start := time.Now()
	err = w.writer.Write(payload, nil)
	end := time.Now()
	if after, _ := os.Readlink(data); after != before {
		w.out.projected(w.vol, rv, start, end)
	}
	if err != nil {
		return fmt.Errorf("project %s %s (resourceVersion %s) into %s: %w", w.vol.kind, w.key, rv, w.vol.dir, err)
	}
	return nil
}
