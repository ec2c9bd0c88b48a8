package alertmanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/controller/alertmanager/amconfig"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/store"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/controller/webconfig"
)

const (
	// conditionReconciled is True when the objects of an Alertmanager
	// match its spec and the objects it selects.
	conditionReconciled = "Reconciled"
	// docLink names where the fields are listed.
	docLink = "docs/prometheus-operator.md"
)

// Options configure the reconciler of Alertmanager objects.
type Options struct {
	// ControllerID is the value of takeover.AnnotationControllerID of the
	// Alertmanager objects taken over (the match is exact; empty takes
	// those without the annotation).
	ControllerID string
	// ReloaderImage is the config-reloader's image in the pods.
	ReloaderImage string
}

// reconciler is the Reconciler of Alertmanager objects.
type reconciler struct {
	client   client.Client
	reader   client.Reader
	recorder recorder.EventRecorder
	logger   *slog.Logger
	writer   *kube.Writer
	refs     *store.Tracker
	opts     Options
	metrics  metrics

	// work is held by a render and by a status update without one.
	work sync.Mutex
	// lifecycle takes each Alertmanager through the takeover's lifecycle,
	// of which this kind is a variant (lifecycle.go).
	lifecycle *takeover.Lifecycle[*monitoringv1.Alertmanager, synced, variant]

	mu sync.Mutex
	// told are the messages of the Events told about each Alertmanager
	// and AlertmanagerConfig, so that each is told once.
	told map[string]string
	// synced is what each Alertmanager's last sync wrote, for the status
	// without a render.
	synced map[types.NamespacedName]synced
	// bound is the condition of each binding last applied, unbound the
	// bindings last removed: the cache may not show them yet.
	bound   map[bindingKey]monitoringv1.ConfigResourceCondition
	unbound map[bindingKey]bool

	// bindings is whether the AlertmanagerConfigs get a binding in their
	// status (their CRD has the status subresource).
	bindings bool
	// stored reads the AlertmanagerConfigs as stored, for the fields of
	// a newer CRD their types drop (unknownConfigFields).
	stored *takeover.Stored
}

// synced is what a sync of an Alertmanager did: its Reconciled
// condition, the content hash of the configuration it wrote and the
// StatefulSet as written.
type synced struct {
	cond metav1.Condition
	hash string
	sts  *appsv1.StatefulSet
}

type metrics struct {
	// runs are the reconciles' (kube.Reconciles): their Errors count the
	// Alertmanagers not reconciled as their spec says too (unsupported
	// fields, a configuration that does not load, the last good one
	// kept).
	runs          kube.Reconciles
	leftOut       *prometheus.GaugeVec
	configApplied *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer, runs kube.Reconciles) metrics {
	f := promauto.With(reg)
	return metrics{
		runs: runs,
		leftOut: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podreload_controller_alertmanagerconfigs_left_out",
			Help: "AlertmanagerConfigs selected by an Alertmanager taken over and left out of its configuration (a reference that failed, or Alertmanager's parser refused them), by Alertmanager.",
		}, []string{"namespace", "alertmanager"}),
		configApplied: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podreload_controller_alertmanager_config_applied",
			Help: "1 when every ready replica of an Alertmanager taken over runs the configuration last written, 0 otherwise.",
		}, []string{"namespace", "alertmanager"}),
	}
}

// Reconcile makes the objects of the Alertmanager req names match it when
// it is handed to the controller, and hands it back otherwise.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.work.Lock()
	defer r.work.Unlock()
	start := time.Now()
	r.metrics.runs.Total.Inc()
	err := r.lifecycle.Reconcile(ctx, req.NamespacedName, false)
	r.metrics.runs.Duration.Observe(time.Since(start).Seconds())
	if err != nil {
		r.metrics.runs.Errors.Inc() // controller-runtime logs it, and retries.
	}
	return ctrl.Result{}, err
}

// sync builds the configuration of am and writes its objects, in order:
// the generated Secret, the web config Secret and the cluster TLS Secret
// the pods read, the
// governing Service, the reloaders' Role, then the StatefulSet, adopted
// from prometheus-operator (its fields become the controller's; those it
// does not render go).
func (r *reconciler) sync(ctx context.Context, am *monitoringv1.Alertmanager) (synced, error) {
	key := client.ObjectKeyFromObject(am)
	own := kube.Owner{Key: "alertmanager", Object: am, Adopt: []string{takeover.OperatorFieldManager}, Orphan: true}
	res := synced{cond: reconciled(am)}
	in := inputs{am: am, reloaderImage: r.opts.ReloaderImage}
	config, refs, err := r.configure(ctx, am)
	if err != nil {
		msg, kept, getErr := r.configFailed(ctx, am, err)
		res.cond = metav1.Condition{Type: conditionReconciled, Status: metav1.ConditionFalse, Reason: "InvalidConfiguration", Message: msg}
		if getErr != nil || !kept {
			// Without a configuration nothing is written, as the pods
			// would wait for one.
			r.refs.Remember(key, refs)
			return res, getErr
		}
	} else {
		r.tell(am, nil, "InvalidConfiguration", "")
		in.config, in.templates = config.config, config.templates
	}
	bind := err == nil
	var failed string
	in.web, in.clusterTLS, refs, failed, err = r.podFiles(ctx, am, refs)
	// A change of what the configuration, spec.web or spec.clusterTLS
	// read renders again.
	r.refs.Remember(key, refs)
	if failed != "" {
		// Nothing is written: the pods would not start.
		r.metrics.runs.Errors.Inc()
		res.cond = metav1.Condition{Type: conditionReconciled, Status: metav1.ConditionFalse, Reason: failed, Message: err.Error()}
		return res, nil
	}
	var live appsv1.StatefulSet
	switch err := r.reader.Get(ctx, types.NamespacedName{Namespace: am.Namespace, Name: stsName(am.Name)}, &live); {
	case err == nil:
		in.live = &live
	case !apierrors.IsNotFound(err):
		return res, fmt.Errorf("get StatefulSet %s/%s: %w", am.Namespace, stsName(am.Name), err)
	}
	objs, err := render(in)
	if err != nil {
		return res, err
	}
	if objs.generated != nil {
		if err := kube.Write(ctx, r.writer, own, objs.generated, kube.SyncSecret); err != nil {
			return res, err
		}
		res.hash = objs.contentHash
	} else if res.hash, err = r.writtenHash(ctx, am); err != nil {
		return res, err
	}
	if err := kube.Write(ctx, r.writer, own, objs.web, kube.SyncSecret); err != nil {
		return res, err
	}
	if objs.clusterTLS != nil {
		if err := kube.Write(ctx, r.writer, own, objs.clusterTLS, kube.SyncSecret); err != nil {
			return res, err
		}
	}
	if objs.service != nil {
		shared := own
		shared.Adopt = nil
		if err := kube.WriteShared(ctx, r.writer, shared, objs.service, kube.SyncService); err != nil {
			return res, err
		}
	}
	if err := kube.Write(ctx, r.writer, own, objs.role, kube.SyncRole); err != nil {
		return res, err
	}
	if err := kube.Write(ctx, r.writer, own, objs.binding, kube.SyncRoleBinding); err != nil {
		return res, err
	}
	sts, err := r.writer.ApplyStatefulSet(ctx, own, objs.sts)
	var recreating *kube.RecreatingError
	if errors.As(err, &recreating) {
		// The deletion's event (orphaning the pods) brings the
		// Alertmanager back here, to create it again.
		res.cond = metav1.Condition{Type: conditionReconciled, Status: metav1.ConditionFalse, Reason: "RecreatingStatefulSet", Message: err.Error()}
		return res, nil
	}
	if err != nil {
		return res, err
	}
	res.sts = sts
	if !bind {
		return res, nil // The bindings say what the configuration kept.
	}
	// Written last, once the configuration they tell of is.
	return res, r.bind(ctx, am, config.selected, config.leftOut)
}

// podFiles renders the files of am the pods mount: spec.web's web
// configuration and spec.clusterTLS's, and returns what they read besides
// refs. When
// one fails, failed is the Reconciled condition's reason, err says why,
// and a Warning Event tells it (once).
func (r *reconciler) podFiles(ctx context.Context, am *monitoringv1.Alertmanager, refs []store.Ref) (web webconfig.Rendered, clusterTLS []byte, _ []store.Ref, failed string, err error) {
	web, err = renderWeb(ctx, r.reader, am)
	refs = store.Union(refs, web.Refs)
	if err != nil {
		r.tell(am, nil, "InvalidWebConfig", err.Error())
		return web, nil, refs, "InvalidWebConfig", err
	}
	r.tell(am, nil, "InvalidWebConfig", "")
	// prometheus-operator fails on what renderClusterTLS refuses too.
	clusterTLS, err = renderClusterTLS(am)
	if err == nil {
		var tlsRefs []store.Ref
		tlsRefs, err = readClusterTLS(ctx, r.reader, am)
		refs = store.Union(refs, tlsRefs)
	}
	if err != nil {
		r.tell(am, nil, "InvalidClusterTLS", err.Error())
		return web, nil, refs, "InvalidClusterTLS", err
	}
	r.tell(am, nil, "InvalidClusterTLS", "")
	return web, clusterTLS, refs, "", nil
}

// configFailed tells of err, why am's configuration was not generated,
// and returns the Reconciled condition's message and whether the last
// good one is kept: when none was ever written, nothing is written.
func (r *reconciler) configFailed(ctx context.Context, am *monitoringv1.Alertmanager, err error) (string, bool, error) {
	r.metrics.runs.Errors.Inc()
	hash, getErr := r.writtenHash(ctx, am)
	if getErr != nil {
		return err.Error(), false, getErr
	}
	msg := "the last good configuration is kept: " + err.Error()
	if hash == "" {
		msg = "nothing is written until a configuration is generated: " + err.Error()
	}
	r.logger.Warn("configuration not generated", "alertmanager", client.ObjectKeyFromObject(am), "err", err, "kept", hash != "")
	r.tell(am, nil, "InvalidConfiguration", msg)
	return msg, hash != "", nil
}

// writtenHash is the content hash of the generated Secret as it is, for a
// sync that keeps it.
func (r *reconciler) writtenHash(ctx context.Context, am *monitoringv1.Alertmanager) (string, error) {
	var s corev1.Secret
	err := r.reader.Get(ctx, types.NamespacedName{Namespace: am.Namespace, Name: generatedName(am.Name)}, &s)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("get Secret %s/%s: %w", am.Namespace, generatedName(am.Name), err)
	}
	return contract.Sum(s.Data[configKey], nil), nil
}

// configuration is what configure builds.
type configuration struct {
	config    []byte
	templates map[string][]byte
	// selected are the AlertmanagerConfigs selected, leftOut why those
	// left out were.
	selected []*monitoringv1alpha1.AlertmanagerConfig
	leftOut  map[types.NamespacedName]string
}

// configure builds am's configuration with amconfig.Generate from its
// base (the configSecret, or the AlertmanagerConfig
// spec.alertmanagerConfiguration names) and the AlertmanagerConfigs it
// selects, returns what it read (for the Tracker), and tells about each
// AlertmanagerConfig left out: a Warning Event on it, once per reason, a
// log line and the gauge.
func (r *reconciler) configure(ctx context.Context, am *monitoringv1.Alertmanager) (configuration, []store.Ref, error) {
	key := client.ObjectKeyFromObject(am)
	var refs []store.Ref
	if am.Spec.AlertmanagerConfiguration == nil {
		refs = []store.Ref{{Kind: store.Secret, Namespace: am.Namespace, Name: configSecretName(am)}}
	}
	baseConfig, templates, err := base(ctx, r.reader, am)
	if err != nil {
		return configuration{}, refs, err
	}
	global, err := globalConfig(ctx, r.client, am)
	if err != nil {
		return configuration{}, refs, err
	}
	configs, err := selectConfigs(ctx, r.client, am)
	if err != nil {
		return configuration{}, refs, err
	}
	known, left, err := r.unknownConfigFields(ctx, configs)
	if err != nil {
		return configuration{}, refs, err
	}
	res := &resolver{reader: r.reader}
	out, err := amconfig.Generate(ctx, amconfig.Input{Alertmanager: am, Base: baseConfig, Configuration: global, Configs: known, Resolver: res})
	refs = store.Union(refs, res.refs)
	if err != nil {
		return configuration{}, refs, err
	}
	for _, l := range out.LeftOut {
		left[l.Config] = l.Reason
	}
	r.metrics.leftOut.WithLabelValues(am.Namespace, am.Name).Set(float64(len(left)))
	for _, c := range configs {
		reason := left[client.ObjectKeyFromObject(c)]
		if r.tell(c, am, "LeftOut", reasonNote(am, reason)) {
			r.logger.Warn("AlertmanagerConfig left out", "alertmanager", key, "alertmanagerconfig", client.ObjectKeyFromObject(c), "reason", reason)
		}
	}
	return configuration{config: out.Config, templates: templates, selected: configs, leftOut: left}, refs, nil
}

// unknownConfigFields returns the configs whose fields their Go types all
// know, and why each other one is left out: it sets a field of a newer
// prometheus-operator's CRD, which the typed cache dropped and the
// configuration could not carry (read as stored, once per generation).
func (r *reconciler) unknownConfigFields(ctx context.Context, configs []*monitoringv1alpha1.AlertmanagerConfig) ([]*monitoringv1alpha1.AlertmanagerConfig, map[types.NamespacedName]string, error) {
	known := make([]*monitoringv1alpha1.AlertmanagerConfig, 0, len(configs))
	left := map[types.NamespacedName]string{}
	for _, c := range configs {
		unknown, err := r.stored.Unknown(ctx, c, &monitoringv1alpha1.AlertmanagerConfig{})
		if err != nil {
			return nil, nil, err
		}
		if len(unknown) > 0 {
			left[client.ObjectKeyFromObject(c)] = strings.Join(unknown, "; ")
			continue
		}
		known = append(known, c)
	}
	return known, left, nil
}

// reasonNote is the note of the Event on an AlertmanagerConfig left out of
// am's configuration for reason; "" when it is not.
func reasonNote(am *monitoringv1.Alertmanager, reason string) string {
	if reason == "" {
		return ""
	}
	return fmt.Sprintf("left out of Alertmanager %s/%s: %s", am.Namespace, am.Name, reason)
}

// tell emits a Warning Event about regarding with reason and note, once
// per note, and reports whether it did; an empty note forgets the last
// one.
func (r *reconciler) tell(regarding client.Object, related runtime.Object, reason, note string) bool {
	k := fmt.Sprintf("%T/%s/%s/%s", regarding, regarding.GetNamespace(), regarding.GetName(), reason)
	r.mu.Lock()
	told := r.told[k] == note
	if note == "" {
		delete(r.told, k)
	} else {
		r.told[k] = note
	}
	r.mu.Unlock()
	if told || note == "" {
		return false
	}
	kube.Warn(r.recorder, regarding, related, reason, note)
	return true
}

// forget drops what is kept about an Alertmanager.
func (r *reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.synced, key)
	for k := range r.bound {
		if k.alertmanager == key {
			delete(r.bound, k)
		}
	}
	r.mu.Unlock()
	r.refs.Forget(key)
	r.metrics.leftOut.DeleteLabelValues(key.Namespace, key.Name)
	r.metrics.configApplied.DeleteLabelValues(key.Namespace, key.Name)
}

// pods lists the pods of am's StatefulSet.
func (r *reconciler) pods(ctx context.Context, am *monitoringv1.Alertmanager) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(am.Namespace), client.MatchingLabels{labelAlertmanager: am.Name, kube.LabelName: App}); err != nil {
		return nil, fmt.Errorf("list pods of Alertmanager %s/%s: %w", am.Namespace, am.Name, err)
	}
	return pods.Items, nil
}

// gvk is the Alertmanager kind's.
func gvk() schema.GroupVersionKind {
	return monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.AlertmanagersKind)
}
