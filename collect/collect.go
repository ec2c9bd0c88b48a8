// Package collect writes the ConfigMaps and Secrets selected by a label
// (or named) from one namespace, several or all into files, one per key,
// and asks an application to reload them: the behaviour of kiwigrid's
// k8s-sidecar (Grafana's dashboards and datasources, Jenkins'
// configuration as code), on podreload's terms.
//
// Each target (a resource in a namespace) is listed, then watched from
// the list's resourceVersion with bookmarks; a watch that ends resumes
// where it stopped, one the API server can no longer resume (410) lists
// again, and a list removes the files of the objects deleted meanwhile.
// Files are written atomically (a temporary file renamed over the old
// one), only when their content changes. The reload (SCRIPT, then
// REQ_URL) is sent once per burst of changes, after every file of the
// burst is on disk, and at start-up once for everything listed.
package collect

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// Resource is a kind of object collected, as RESOURCE names it.
type Resource string

// The resources collected.
const (
	ConfigMap Resource = "configmap"
	Secret    Resource = "secret"
)

func (r Resource) plural() string { return string(r) + "s" }

// Method is how the objects are read (METHOD).
type Method string

// The methods.
const (
	// Watch lists, then watches (the default).
	Watch Method = "WATCH"
	// List lists once, writes, reloads and returns: the init-container
	// mode.
	List Method = "LIST"
	// Sleep lists every SleepTime.
	Sleep Method = "SLEEP"
)

// MaxURLSize bounds the content fetched for a .url key.
const MaxURLSize = 16 << 20

// Options configures a Collector; the names in parentheses are
// k8s-sidecar's variables.
type Options struct {
	// Client reaches the API server (NewRESTClient).
	Client rest.Interface
	// Namespaces are those to read (NAMESPACE); empty reads all (ALL).
	Namespaces []string
	// Resources are the kinds read (RESOURCE).
	Resources []Resource
	// Label and LabelValue select the objects (LABEL, LABEL_VALUE: any
	// value when empty).
	Label, LabelValue string
	// Names are RESOURCE_NAME's entries, name, resource/name or
	// namespace/resource/name: with a namespace list, the objects so
	// named, whatever their labels, are read instead of those the label
	// selects, for the resources and namespaces where one is named.
	Names []string
	// Folder is where files go (FOLDER).
	Folder string
	// FolderAnnotation names the annotation of an object that puts its
	// files elsewhere (FOLDER_ANNOTATION): an absolute path, or one
	// relative to Folder.
	FolderAnnotation string
	// UniqueFilenames names files namespace_NS.RESOURCE_NAME.KEY
	// (UNIQUE_FILENAMES).
	UniqueFilenames bool
	// FileMode is the files' mode (DEFAULT_FILE_MODE); 0 means 0644.
	FileMode fs.FileMode
	// Method is how objects are read (METHOD); empty means Watch.
	Method Method
	// SleepTime is the wait between lists of Sleep (SLEEP_TIME).
	SleepTime time.Duration
	// ServerTimeout is how long the API server keeps a watch open
	// (WATCH_SERVER_TIMEOUT); the next resumes where it stopped.
	ServerTimeout time.Duration
	// ClientTimeout ends a watch that received nothing for that long
	// (WATCH_CLIENT_TIMEOUT), and is how long a target may have no
	// working watch before Live fails.
	ClientTimeout time.Duration
	// ErrorThrottle is the longest wait before retrying after an error
	// (ERROR_THROTTLE_SLEEP); the waits double up to it from 200 ms.
	ErrorThrottle time.Duration
	// IgnoreAlreadyProcessed skips an object listed again at the
	// resourceVersion last processed (IGNORE_ALREADY_PROCESSED): its .url
	// keys are not fetched again. Files are rewritten only when their
	// content changes either way.
	IgnoreAlreadyProcessed bool
	// HTTP configures the reload request and .url fetches (REQ_*).
	HTTP HTTP
	// Reload is what to do after a burst of changes.
	Reload Reload
	// SkipInitReload sends no reload after the first sync (REQ_SKIP_INIT).
	SkipInitReload bool
	// AfterBurst, if set, is called after each burst of changes was
	// written and reloaded (the sidecar's trimmer then drops the code
	// pages the burst used).
	AfterBurst func()
}

// Collector writes the objects selected into files and reloads.
type Collector struct {
	logger   *slog.Logger
	opts     Options
	m        *metrics
	client   rest.Interface
	store    *store
	req      *requester
	notifier *notifier
	watchers []*watcher

	mu            sync.Mutex
	pending       int  // targets not listed yet
	ready         bool // every target listed once
	initialChange bool // files changed before ready
}

// New returns a Collector; a nil logger discards logs.
func New(logger *slog.Logger, reg prometheus.Registerer, opts Options) (*Collector, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case opts.Client == nil:
		return nil, errors.New("no API server client")
	case opts.Folder == "":
		return nil, errors.New("no folder to write files into")
	case opts.Label == "" && len(opts.Names) == 0:
		return nil, errors.New("no label to select objects with")
	case len(opts.Resources) == 0:
		return nil, errors.New("no resource to read")
	}
	if opts.Method == "" {
		opts.Method = Watch
	}
	if opts.FileMode == 0 {
		opts.FileMode = 0o644
	}
	if opts.ClientTimeout <= 0 {
		opts.ClientTimeout = 66 * time.Second
	}
	if opts.ServerTimeout <= 0 {
		opts.ServerTimeout = 60 * time.Second
	}
	m := newMetrics(reg)
	c := &Collector{logger: logger, opts: opts, m: m, client: opts.Client, req: newRequester(opts.HTTP)}
	c.store = newStore(logger.With("component", "files"), opts.FileMode, m)
	c.notifier = newNotifier(logger.With("component", "reload"), m, c.req, opts.Reload)
	if opts.AfterBurst != nil {
		fire := c.notifier.fire
		c.notifier.fire = func(ctx context.Context) error {
			defer opts.AfterBurst()
			return fire(ctx)
		}
	}
	for _, t := range targets(opts) {
		c.watchers = append(c.watchers, &watcher{c: c, t: t, downSince: time.Now()})
	}
	c.pending = len(c.watchers)
	return c, nil
}

// targets returns what to list and watch, as k8s-sidecar does: per
// resource and namespace, the objects RESOURCE_NAME names there, else
// those the label selects.
func targets(opts Options) []target {
	selector := opts.Label
	if opts.LabelValue != "" {
		selector += "=" + opts.LabelValue
	}
	namespaces := opts.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	var ts []target
	for _, r := range opts.Resources {
		for _, ns := range namespaces {
			var names []string
			for _, entry := range opts.Names {
				if ns == "" {
					break
				}
				parts := strings.Split(entry, "/")
				name := parts[len(parts)-1]
				switch {
				case name == "",
					len(parts) >= 2 && parts[len(parts)-2] != string(r),
					len(parts) == 3 && parts[0] != ns:
					continue
				}
				names = append(names, name)
			}
			if len(names) == 0 && opts.Label == "" {
				continue
			}
			if len(names) == 0 {
				ts = append(ts, target{resource: r, namespace: ns, selector: selector})
			}
			for _, n := range names {
				ts = append(ts, target{resource: r, namespace: ns, name: n})
			}
		}
	}
	return ts
}

// Run reads and writes until ctx is done, or with List once.
func (c *Collector) Run(ctx context.Context) error {
	c.logger.Info("collecting", "method", string(c.opts.Method), "targets", len(c.watchers), "folder", c.opts.Folder)
	switch c.opts.Method {
	case List:
		return c.listOnce(ctx)
	case Sleep:
		return c.runWith(ctx, c.sleep)
	default:
		return c.runWith(ctx, func(ctx context.Context) {
			var wg sync.WaitGroup
			for _, w := range c.watchers {
				wg.Go(func() { w.run(ctx) })
			}
			wg.Wait()
		})
	}
}

// runWith runs read and the notifier until ctx is done.
func (c *Collector) runWith(ctx context.Context, read func(context.Context)) error {
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.notifier.run(ctx) })
	read(ctx)
	wg.Wait()
	return nil
}

// listOnce lists every target, retrying each a few times, then reloads
// if files changed.
func (c *Collector) listOnce(ctx context.Context) error {
	changed := false
	for _, w := range c.watchers {
		for attempt := 1; ; attempt++ {
			ch, err := w.list(ctx)
			changed = changed || ch
			if err == nil {
				break
			}
			if attempt == 5 || ctx.Err() != nil {
				return err
			}
			w.failed(ctx, err, attempt, "error")
		}
		w.markSynced()
	}
	if changed {
		_ = c.notifier.reload(ctx)
	}
	return nil
}

// sleep lists every target every SleepTime.
func (c *Collector) sleep(ctx context.Context) {
	for {
		for _, w := range c.watchers {
			changed, err := w.list(ctx)
			if changed {
				c.changed()
			}
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				w.down()
				c.m.watchRestarts.WithLabelValues("error").Inc()
				c.logger.Warn("API server", "watching", w.t.String(), "err", err)
			default:
				w.up()
				w.markSynced()
			}
		}
		t := time.NewTimer(c.opts.SleepTime)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// changed says that files changed on disk.
func (c *Collector) changed() {
	c.mu.Lock()
	if !c.ready {
		c.initialChange = true
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.notifier.changed()
}

// synced says that one more target was listed for the first time.
func (c *Collector) synced() {
	c.mu.Lock()
	c.pending--
	done := c.pending == 0 && !c.ready
	if done {
		c.ready = true
	}
	reload := done && c.initialChange && !c.opts.SkipInitReload
	c.mu.Unlock()
	if !done {
		return
	}
	c.store.mu.Lock()
	objects, files := len(c.store.objects), len(c.store.files)
	c.store.mu.Unlock()
	c.logger.Info("initial sync done", "objects", objects, "files", files)
	if reload && c.opts.Method != List {
		c.notifier.changed()
	}
}

// Ready returns an error until every target was listed once.
func (c *Collector) Ready() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		return fmt.Errorf("not synced yet: %d of %d targets to list", c.pending, len(c.watchers))
	}
	return nil
}

// Live returns an error when a target has had no working watch (or list,
// with Sleep) for longer than ClientTimeout (with Sleep, SleepTime more).
func (c *Collector) Live() error {
	limit := c.opts.ClientTimeout
	if c.opts.Method == Sleep {
		limit += c.opts.SleepTime
	}
	now := time.Now()
	for _, w := range c.watchers {
		if since, dead := w.dead(now, limit); dead {
			return fmt.Errorf("no working watch of %s since %s", w.t, since.Format(time.RFC3339))
		}
	}
	return nil
}

// process turns an object into its files and reports whether any
// changed on disk.
func (c *Collector) process(ctx context.Context, key objectKey, obj runtime.Object) bool {
	m := obj.(metav1.Object)
	rv := m.GetResourceVersion()
	if c.opts.IgnoreAlreadyProcessed && c.store.processed(key, rv) {
		return false
	}
	folder := c.opts.Folder
	if dir, ok := m.GetAnnotations()[c.opts.FolderAnnotation]; ok && c.opts.FolderAnnotation != "" {
		if filepath.IsAbs(dir) {
			folder = dir
		} else {
			folder = filepath.Join(c.opts.Folder, dir)
		}
	}
	want, keep := map[string][]byte{}, map[string]bool{}
	add := func(k string, v []byte) {
		name, isURL := strings.CutSuffix(k, ".url")
		if c.opts.UniqueFilenames {
			name = "namespace_" + key.namespace + "." + string(key.resource) + "_" + key.name + "." + name
		}
		path := filepath.Join(folder, name)
		if isURL {
			resp, err := c.req.do(ctx, "GET", strings.TrimSpace(string(v)), nil, MaxURLSize)
			if err == nil && resp.status >= 400 && (resp.status < 500 || !c.opts.HTTP.Accept5xx) {
				err = fmt.Errorf("answered %d", resp.status)
			}
			if err != nil {
				c.m.urlErrors.Inc()
				c.logger.Error("fetch .url key, the file keeps its content", "object", key.String(), "key", k, "err", err)
				keep[path] = true
				return
			}
			v = resp.body
		}
		want[path] = v
	}
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		for k, v := range o.Data {
			add(k, []byte(v))
		}
		for k, v := range o.BinaryData {
			add(k, v)
		}
	case *corev1.Secret:
		for k, v := range o.Data {
			add(k, v)
		}
	}
	return c.store.set(key, rv, want, keep)
}
