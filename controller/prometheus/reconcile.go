package prometheus

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/kube"
)

const (
	// conditionReconciled is True when the objects of a PrometheusServer
	// match its spec and the objects it selects.
	conditionReconciled = "Reconciled"
	// conditionAvailable is True when every replica of a PrometheusServer
	// is ready.
	conditionAvailable = "Available"
	// maxEventNote is the longest note of an events.k8s.io/v1 Event.
	maxEventNote = 1024
)

// reconciler is the Reconciler of PrometheusServers.
type reconciler struct {
	client client.Client
	reader client.Reader
	// metadata reads the cached metadata of Secrets.
	metadata client.Reader
	scheme   *runtime.Scheme
	recorder recorder.EventRecorder
	logger   *slog.Logger
	metrics  *metrics
	workload WorkloadOptions

	mu sync.Mutex
	// caches are the rule caches, by server.
	caches map[types.NamespacedName]*ruleCache
	// secretRefs are the Secrets each server's last render referenced.
	secretRefs map[types.NamespacedName][]string
	// warned are the rejections of each server already told in an Event.
	warned map[types.NamespacedName]map[rejection]struct{}
	// written is the content each server's status last showed written.
	written map[types.NamespacedName]written
}

// written is content the controller wrote, for the time every replica
// takes to apply it.
type written struct {
	hash  string
	at    time.Time
	timed bool // applied and timed, or not to be timed
}

type metrics struct {
	reconciles, errors, recreations prometheus.Counter
	duration                        prometheus.Histogram
	triggers                        *prometheus.CounterVec
	writes                          *prometheus.CounterVec
	drift                           *prometheus.CounterVec
	selected, rejected              *prometheus.GaugeVec
	configApplied                   *prometheus.GaugeVec
	applySeconds                    prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	return &metrics{
		reconciles: f.NewCounter(prometheus.CounterOpts{
			Name: "podreload_controller_reconciles_total",
			Help: "PrometheusServer reconciliations.",
		}),
		errors: f.NewCounter(prometheus.CounterOpts{
			Name: "podreload_controller_reconcile_errors_total",
			Help: "PrometheusServer reconciliations that failed: retried, or, for an invalid PrometheusServer, done again when it changes.",
		}),
		recreations: f.NewCounter(prometheus.CounterOpts{
			Name: "podreload_controller_statefulset_recreations_total",
			Help: "StatefulSets deleted to be created again because a change touched an immutable field.",
		}),
		duration: f.NewHistogram(prometheus.HistogramOpts{
			Name:                            "podreload_controller_reconcile_duration_seconds",
			Help:                            "Duration of PrometheusServer reconciliations.",
			Buckets:                         prometheus.ExponentialBuckets(0.001, 4, 8),
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: time.Hour,
		}),
		triggers: f.NewCounterVec(prometheus.CounterOpts{
			Name: "podreload_controller_triggers_total",
			Help: "Reconciliations asked for by a change to an object of this kind, one per PrometheusServer concerned.",
		}, []string{"kind"}),
		writes: f.NewCounterVec(prometheus.CounterOpts{
			Name: "podreload_controller_writes_total",
			Help: "Write calls to the API server, by kind of object and verb.",
		}, []string{"kind", "verb"}),
		drift: f.NewCounterVec(prometheus.CounterOpts{
			Name: "podreload_controller_drift_corrected_total",
			Help: "Objects written again, their inputs unchanged, because someone else changed what the controller sets in them, by kind.",
		}, []string{"kind"}),
		selected: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podreload_controller_selected_resources",
			Help: "Objects a PrometheusServer selects, rejected ones included.",
		}, []string{"namespace", "name", "kind"}),
		configApplied: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podreload_controller_config_applied",
			Help: "Whether every ready replica of a PrometheusServer runs the configuration and rules last written (its ConfigApplied condition).",
		}, []string{"namespace", "name"}),
		applySeconds: f.NewHistogram(prometheus.HistogramOpts{
			Name:                            "podreload_controller_config_apply_seconds",
			Help:                            "Seconds from the controller writing new configuration or rules to every ready replica of the PrometheusServer reporting it runs them.",
			Buckets:                         []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300},
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: time.Hour,
		}),
		rejected: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podreload_controller_rejected_resources",
			Help: "Selected objects left out of a PrometheusServer's configuration because they are invalid.",
		}, []string{"namespace", "name", "kind"}),
	}
}

// Reconcile makes the objects of the PrometheusServer req names match it.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := time.Now()
	r.metrics.reconciles.Inc()
	err := r.reconcile(ctx, req.NamespacedName)
	r.metrics.duration.Observe(time.Since(start).Seconds())
	if err != nil {
		r.metrics.errors.Inc() // controller-runtime logs it, and retries.
	}
	return ctrl.Result{}, err
}

func (r *reconciler) reconcile(ctx context.Context, key types.NamespacedName) error {
	var server v1alpha1.PrometheusServer
	if err := r.client.Get(ctx, key, &server); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(key)
			return nil
		}
		return fmt.Errorf("get PrometheusServer %s: %w", key, err)
	}
	if server.Spec.Paused {
		r.logger.Debug("paused", "server", key)
		return nil
	}
	in, err := r.inputs(ctx, &server)
	if err != nil {
		return err
	}
	// The Secrets the last render referenced are read first; when this
	// render references others, even one that failed on them, it is done
	// again with them.
	var objs *objects
	refs := r.refs(key)
	for {
		if in.Secrets, in.ConfigMaps, err = r.readRefs(ctx, refs); err != nil {
			return err
		}
		objs, err = render(in, r.workload, r.ruleCache(key))
		var specErr *specError
		var seen []string
		switch {
		case err == nil:
			seen = objs.SecretRefs
		case errors.As(err, &specErr):
			seen = specErr.SecretRefs
		}
		if isSubset(seen, refs) {
			break
		}
		refs = sortedUnique(append(refs, seen...))
	}
	if err != nil {
		// Nothing changes until the server, or a Secret it references,
		// does: its spec is at fault, and what was written last stays.
		// The Secrets are remembered, so that creating or fixing one
		// brings the server back here.
		r.remember(key, refs)
		r.metrics.errors.Inc()
		r.logger.Error("render", "server", key, "err", err)
		r.event(&server, nil, "InvalidSpec", err.Error())
		return r.writeStatus(ctx, &server, nil, nil, metav1.Condition{
			Type: conditionReconciled, Status: metav1.ConditionFalse, Reason: "InvalidSpec", Message: err.Error(),
		})
	}
	r.remember(key, objs.SecretRefs)
	r.warn(&server, in, objs.Rejected)

	sets, err := r.write(ctx, &server, objs)
	cond := metav1.Condition{Type: conditionReconciled, Status: metav1.ConditionTrue, Reason: "Reconciled",
		Message: fmt.Sprintf("configuration %.12s and %d rule file ConfigMaps written", objs.ConfigHash, len(objs.RuleShards))}
	var recreating *recreatingError
	switch {
	case errors.As(err, &recreating):
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "RecreatingStatefulSet", err.Error()
		err = nil // The deletion's event brings the server back here.
	case err != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "WriteFailed", err.Error()
	case objs.Oversized != nil:
		// The rules, Service and StatefulSet are written; the last
		// configuration stays until a monitor changes.
		r.metrics.errors.Inc()
		r.logger.Error("configuration too large", "server", key, "err", objs.Oversized)
		r.event(&server, nil, "ConfigTooLarge", objs.Oversized.Error())
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "ConfigTooLarge",
			fmt.Sprintf("%d rule file ConfigMaps written, the configuration not: %v", len(objs.RuleShards), objs.Oversized)
	}
	return errors.Join(err, r.writeStatus(ctx, &server, objs, sets, cond))
}

// inputs reads from the cache what server's objects are rendered from, but
// for the Secrets.
func (r *reconciler) inputs(ctx context.Context, server *v1alpha1.PrometheusServer) (inputs, error) {
	in := inputs{Server: server, Namespaces: map[string]labels.Set{}}
	var nss corev1.NamespaceList
	if err := r.client.List(ctx, &nss, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("list namespaces: %w", err)
	}
	for _, ns := range nss.Items {
		in.Namespaces[ns.Name] = ns.Labels
	}
	var sms monitoringv1.ServiceMonitorList
	if err := r.client.List(ctx, &sms, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("list ServiceMonitors: %w", err)
	}
	in.ServiceMonitors = pointers(sms.Items)
	var pms monitoringv1.PodMonitorList
	if err := r.client.List(ctx, &pms, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("list PodMonitors: %w", err)
	}
	in.PodMonitors = pointers(pms.Items)
	var probes monitoringv1.ProbeList
	if err := r.client.List(ctx, &probes, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("list Probes: %w", err)
	}
	in.Probes = pointers(probes.Items)
	var scs monitoringv1alpha1.ScrapeConfigList
	if err := r.client.List(ctx, &scs, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("list ScrapeConfigs: %w", err)
	}
	in.ScrapeConfigs = pointers(scs.Items)
	var rules monitoringv1.PrometheusRuleList
	if err := r.client.List(ctx, &rules, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("list PrometheusRules: %w", err)
	}
	in.Rules = pointers(rules.Items)
	return in, nil
}

// write makes the live objects of server match objs, and returns the live
// StatefulSet (nil while there is none). Without a config Secret in objs,
// the last one written stays; with one, its part Secrets are written
// before it, and those it no longer names deleted after it. No rule file disappears from the pods
// between two states: rule shards are created or updated before the extra
// ones are deleted, and the configuration, whose rule_files name the
// shards, is written before them, or after the deletions when shards go.
// The Role and RoleBinding of the reloaders are written before the
// StatefulSets, so that their pods find them; the StatefulSets of shards
// no longer wanted are deleted last, once the configuration with the new
// shard count is written. It returns the live StatefulSets, by shard, but
// for those being created again: a *recreatingError says which.
func (r *reconciler) write(ctx context.Context, server *v1alpha1.PrometheusServer, objs *objects) ([]*appsv1.StatefulSet, error) {
	extra, err := r.extraShards(ctx, server, objs.RuleShards)
	if err != nil {
		return nil, err
	}
	// The Role first: with the API source, it names the part Secrets
	// the reloaders are about to read.
	if err := writeObject(ctx, r, server, objs.Role, syncRole); err != nil {
		return nil, err
	}
	if err := writeObject(ctx, r, server, objs.RoleBinding, syncRoleBinding); err != nil {
		return nil, err
	}
	writeConfig := func() error {
		if objs.ConfigSecret == nil {
			return nil
		}
		// The parts first: the config Secret names them, and the
		// reloaders wait for every part it names.
		for _, s := range objs.ConfigParts {
			if err := writeObject(ctx, r, server, s, syncSecret); err != nil {
				return err
			}
		}
		if err := writeObject(ctx, r, server, objs.ConfigSecret, syncSecret); err != nil {
			return err
		}
		return r.deleteExtraParts(ctx, server, objs.ConfigParts)
	}
	if len(extra) == 0 {
		if err := writeConfig(); err != nil {
			return nil, err
		}
	}
	for _, cm := range objs.RuleShards {
		if err := writeObject(ctx, r, server, cm, syncConfigMap); err != nil {
			return nil, err
		}
	}
	for _, cm := range extra {
		r.metrics.writes.WithLabelValues("ConfigMap", "delete").Inc()
		if err := r.client.Delete(ctx, cm, client.Preconditions{UID: &cm.UID}); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("delete ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
		}
		r.logger.Info("deleted rule file ConfigMap", "server", client.ObjectKeyFromObject(server), "configmap", cm.Name)
	}
	if len(extra) > 0 {
		if err := writeConfig(); err != nil {
			return nil, err
		}
	}
	// The pods mount the web configuration: written before them. A server
	// that no longer has one keeps the Secret, which goes with it.
	if objs.WebConfigSecret != nil {
		if err := writeObject(ctx, r, server, objs.WebConfigSecret, syncSecret); err != nil {
			return nil, err
		}
	}
	if err := writeObject(ctx, r, server, objs.Service, syncService); err != nil {
		return nil, err
	}
	var (
		live       []*appsv1.StatefulSet
		recreating error
	)
	for _, desired := range objs.StatefulSets {
		sts, err := r.writeStatefulSet(ctx, server, desired)
		var rec *recreatingError
		switch {
		case errors.As(err, &rec):
			// The other shards are written all the same.
			recreating = cmp.Or(recreating, err)
		case err != nil:
			return nil, err
		default:
			live = append(live, sts)
		}
	}
	return live, errors.Join(recreating, r.deleteExtraShards(ctx, server, objs.StatefulSets))
}

// deleteExtraParts deletes the part Secrets of the configuration that
// server controls and parts does not hold: once the config Secret no
// longer names them.
func (r *reconciler) deleteExtraParts(ctx context.Context, server *v1alpha1.PrometheusServer, parts []*corev1.Secret) error {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := r.metadata.List(ctx, &list, client.InNamespace(server.Namespace), client.MatchingLabels{labelConfig: server.Name}); err != nil {
		return fmt.Errorf("list config part Secrets: %w", err)
	}
	for i := range list.Items {
		m := &list.Items[i]
		if !metav1.IsControlledBy(m, server) || m.DeletionTimestamp != nil || !isConfigPart(server, m.Name) ||
			slices.ContainsFunc(parts, func(s *corev1.Secret) bool { return s.Name == m.Name }) {
			continue
		}
		r.metrics.writes.WithLabelValues("Secret", "delete").Inc()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}}
		if err := r.client.Delete(ctx, s, client.Preconditions{UID: &m.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete Secret %s/%s: %w", m.Namespace, m.Name, err)
		}
		r.logger.Info("deleted a config part Secret no longer needed", "server", client.ObjectKeyFromObject(server), "secret", m.Name)
	}
	return nil
}

// deleteExtraShards deletes the StatefulSets server controls that are not
// among sets: those of the shards it no longer has. Their pods go with
// them; their volume claims stay, as a StatefulSet's always do.
func (r *reconciler) deleteExtraShards(ctx context.Context, server *v1alpha1.PrometheusServer, sets []*appsv1.StatefulSet) error {
	var list appsv1.StatefulSetList
	if err := r.client.List(ctx, &list, client.InNamespace(server.Namespace), client.MatchingLabels(selectorLabels(server))); err != nil {
		return fmt.Errorf("list StatefulSets: %w", err)
	}
	for i := range list.Items {
		sts := &list.Items[i]
		if !metav1.IsControlledBy(sts, server) || sts.DeletionTimestamp != nil ||
			slices.ContainsFunc(sets, func(s *appsv1.StatefulSet) bool { return s.Name == sts.Name }) {
			continue
		}
		r.metrics.writes.WithLabelValues("StatefulSet", "delete").Inc()
		if err := r.client.Delete(ctx, sts, client.Preconditions{UID: &sts.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete StatefulSet %s/%s: %w", sts.Namespace, sts.Name, err)
		}
		r.logger.Info("deleted the StatefulSet of a shard no longer wanted", "server", client.ObjectKeyFromObject(server), "statefulset", sts.Name)
	}
	return nil
}

// extraShards returns the rule file ConfigMaps server controls that are
// not among shards.
func (r *reconciler) extraShards(ctx context.Context, server *v1alpha1.PrometheusServer, shards []*corev1.ConfigMap) ([]*corev1.ConfigMap, error) {
	var cms corev1.ConfigMapList
	if err := r.client.List(ctx, &cms, client.InNamespace(server.Namespace), client.MatchingLabels{LabelRuleFiles: server.Name}); err != nil {
		return nil, fmt.Errorf("list rule file ConfigMaps: %w", err)
	}
	var extra []*corev1.ConfigMap
	for i := range cms.Items {
		cm := &cms.Items[i]
		if metav1.IsControlledBy(cm, server) && !slices.ContainsFunc(shards, func(s *corev1.ConfigMap) bool { return s.Name == cm.Name }) {
			extra = append(extra, cm)
		}
	}
	return extra, nil
}

// recreatingError says that a StatefulSet is being deleted to be created
// again.
type recreatingError struct{ key types.NamespacedName }

func (e *recreatingError) Error() string {
	return fmt.Sprintf("StatefulSet %s is being deleted to be created again", e.key)
}

// writeStatefulSet applies desired (server-side apply, field manager kube.Name,
// taking over the fields someone else changed) unless the live StatefulSet
// already holds every field desired sets: what someone else changed in
// them, a container removed or an image replaced, is put back and counted
// as drift when the input hash and replicas are the same. When the API
// server refuses the apply because it changes an immutable field, the
// StatefulSet is deleted (in the foreground, so its pods go first) and
// created again by a later reconciliation.
func (r *reconciler) writeStatefulSet(ctx context.Context, server *v1alpha1.PrometheusServer, desired *appsv1.StatefulSet) (*appsv1.StatefulSet, error) {
	key := client.ObjectKeyFromObject(desired)
	if err := controllerutil.SetControllerReference(server, desired, r.scheme); err != nil {
		return nil, fmt.Errorf("StatefulSet %s: %w", key, err)
	}
	var live appsv1.StatefulSet
	err := r.client.Get(ctx, key, &live)
	if err == nil && live.DeletionTimestamp != nil {
		return nil, &recreatingError{key: key}
	}
	if client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("get StatefulSet %s: %w", key, err)
	}
	exists := err == nil
	if exists {
		if c := metav1.GetControllerOf(&live); c != nil && c.UID != server.UID {
			return nil, fmt.Errorf("apply StatefulSet %s: it is controlled by %s %s", key, c.Kind, c.Name)
		}
		// Comparing first saves a request per reconciliation: an apply
		// that changes nothing is a no-op on the server, but a PATCH all
		// the same.
		if holds(&live, desired) {
			return &live, nil
		}
		if err := r.upgradeManagedFields(ctx, key); err != nil {
			return nil, err
		}
	}
	applied, err := r.apply(ctx, desired)
	if !apierrors.IsInvalid(err) {
		if err != nil {
			return nil, err
		}
		if exists && sameIntent(&live, desired) {
			r.metrics.drift.WithLabelValues("StatefulSet").Inc()
			r.logger.Info("corrected a change made by someone else", "server", client.ObjectKeyFromObject(server), "kind", "StatefulSet", "name", key.Name)
		} else {
			r.logger.Info("applied", "server", client.ObjectKeyFromObject(server), "kind", "StatefulSet", "name", key.Name)
		}
		return applied, nil
	}
	r.logger.Info("recreating StatefulSet: an immutable field changed", "server", client.ObjectKeyFromObject(server), "err", err)
	r.metrics.recreations.Inc()
	r.metrics.writes.WithLabelValues("StatefulSet", "delete").Inc()
	if err := r.client.Delete(ctx, &live, client.PropagationPolicy(metav1.DeletePropagationForeground), client.Preconditions{UID: &live.UID}); client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("delete StatefulSet %s: %w", key, err)
	}
	return nil, &recreatingError{key: key}
}

// apply applies desired with server-side apply, forcing the ownership of
// its fields, and returns the StatefulSet the API server answered.
// Applying the whole rendered object makes the controller the manager of
// every field it sets: a field someone else changed is taken back, one
// they added is left alone.
func (r *reconciler) apply(ctx context.Context, desired *appsv1.StatefulSet) (*appsv1.StatefulSet, error) {
	key := client.ObjectKeyFromObject(desired)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
	if err != nil {
		return nil, fmt.Errorf("apply StatefulSet %s: %w", key, err)
	}
	// The status is not the controller's to set, nor the creation time.
	delete(u, "status")
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	obj := &unstructured.Unstructured{Object: u}
	r.metrics.writes.WithLabelValues("StatefulSet", "apply").Inc()
	if err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(kube.Name), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("apply StatefulSet %s: %w", key, err)
	}
	var applied appsv1.StatefulSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &applied); err != nil {
		return nil, fmt.Errorf("apply StatefulSet %s: %w", key, err)
	}
	return &applied, nil
}

// upgradeManagedFields makes the fields that earlier versions of the
// controller wrote with updates (field manager kube.Name, operation Update)
// fields it applied, so that the next apply removes those it no longer
// sets. The cache holds no managed fields: the StatefulSet is read from
// the API server, only when it is about to be applied.
func (r *reconciler) upgradeManagedFields(ctx context.Context, key types.NamespacedName) error {
	var live appsv1.StatefulSet
	err := r.reader.Get(ctx, key, &live)
	if apierrors.IsNotFound(err) {
		return nil // The apply creates it.
	}
	if err != nil {
		return fmt.Errorf("get StatefulSet %s: %w", key, err)
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(&live, sets.New(kube.Name), kube.Name)
	if err != nil {
		return fmt.Errorf("upgrade managed fields of StatefulSet %s: %w", key, err)
	}
	if patch == nil {
		return nil
	}
	r.metrics.writes.WithLabelValues("StatefulSet", "patch").Inc()
	if err := r.client.Patch(ctx, &live, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("upgrade managed fields of StatefulSet %s: %w", key, err)
	}
	return nil
}

// holds reports whether live has every label, annotation, owner reference
// and spec field that desired sets, with the same value. The fields the
// API server defaults, and the ones desired leaves empty, are not
// compared; a list (of containers, say) must hold desired's items in
// order, and may hold more after them.
func holds(live, desired *appsv1.StatefulSet) bool {
	return equality.Semantic.DeepDerivative(desired.Labels, live.Labels) &&
		equality.Semantic.DeepDerivative(desired.Annotations, live.Annotations) &&
		equality.Semantic.DeepDerivative(desired.OwnerReferences, live.OwnerReferences) &&
		equality.Semantic.DeepDerivative(desired.Spec, live.Spec)
}

// sameIntent reports whether live was written for the same input hash and
// replicas as desired: then a difference is a change made by someone else.
func sameIntent(live, desired *appsv1.StatefulSet) bool {
	return live.Spec.Template.Annotations[annotationInputHash] == desired.Spec.Template.Annotations[annotationInputHash] &&
		ptr.Deref(live.Spec.Replicas, 1) == ptr.Deref(desired.Spec.Replicas, 1)
}

// writeObject creates desired, or updates the live object when it lacks
// the labels of desired, server as its controller, or the fields sync
// copies from desired into it (sync reports whether it changed any), with
// retries on conflicts. An object controlled by something else is an
// error.
func writeObject[T client.Object](ctx context.Context, r *reconciler, server *v1alpha1.PrometheusServer, desired T, sync func(live, desired T) bool) error {
	kind := desired.GetObjectKind().GroupVersionKind().Kind
	key := client.ObjectKeyFromObject(desired)
	if err := controllerutil.SetControllerReference(server, desired, r.scheme); err != nil {
		return fmt.Errorf("%s %s: %w", kind, key, err)
	}
	live := desired.DeepCopyObject().(T)
	err := r.client.Get(ctx, key, live)
	if apierrors.IsNotFound(err) {
		r.metrics.writes.WithLabelValues(kind, "create").Inc()
		if err := r.client.Create(ctx, desired); err != nil {
			return fmt.Errorf("create %s %s: %w", kind, key, err)
		}
		r.logger.Info("created", "server", client.ObjectKeyFromObject(server), "kind", kind, "name", key.Name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get %s %s: %w", kind, key, err)
	}
	wrote := false
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if wrote { // A conflict: the cache is behind.
			if err := r.reader.Get(ctx, key, live); err != nil {
				return err
			}
		}
		if c := metav1.GetControllerOf(live); c != nil && c.UID != server.UID {
			return fmt.Errorf("it is controlled by %s %s", c.Kind, c.Name)
		}
		changed := !metav1.IsControlledBy(live, server)
		if changed {
			if err := controllerutil.SetControllerReference(server, live, r.scheme); err != nil {
				return err
			}
		}
		l := live.GetLabels()
		for k, v := range desired.GetLabels() {
			if old, ok := l[k]; !ok || old != v {
				if l == nil {
					l = map[string]string{}
				}
				l[k], changed = v, true
			}
		}
		live.SetLabels(l)
		if !sync(live, desired) && !changed {
			return nil
		}
		wrote = true
		r.metrics.writes.WithLabelValues(kind, "update").Inc()
		return r.client.Update(ctx, live)
	})
	if err != nil {
		return fmt.Errorf("update %s %s: %w", kind, key, err)
	}
	if wrote {
		r.logger.Info("updated", "server", client.ObjectKeyFromObject(server), "kind", kind, "name", key.Name)
	}
	return nil
}

func syncSecret(live, desired *corev1.Secret) bool {
	if live.Type == desired.Type && len(live.Data) == len(desired.Data) && len(live.StringData) == 0 &&
		maps.EqualFunc(live.Data, desired.Data, bytes.Equal) {
		return false
	}
	live.Type, live.Data, live.StringData = desired.Type, desired.Data, nil
	return true
}

// syncConfigMap makes live hold exactly desired's data and binaryData: a
// rule file ConfigMap written by an older controller, with plain data
// keys, is replaced by its gzipped keys in one update.
func syncConfigMap(live, desired *corev1.ConfigMap) bool {
	if maps.Equal(live.Data, desired.Data) && maps.EqualFunc(live.BinaryData, desired.BinaryData, bytes.Equal) {
		return false
	}
	live.Data, live.BinaryData = desired.Data, desired.BinaryData
	return true
}

// syncService compares the fields renderWorkload sets; the API server
// fills in the others.
func syncService(live, desired *corev1.Service) bool {
	same := live.Spec.ClusterIP == desired.Spec.ClusterIP &&
		maps.Equal(live.Spec.Selector, desired.Spec.Selector) &&
		slices.EqualFunc(live.Spec.Ports, desired.Spec.Ports, func(a, b corev1.ServicePort) bool {
			return a.Name == b.Name && a.Port == b.Port && a.TargetPort == b.TargetPort && ptr.Equal(a.AppProtocol, b.AppProtocol)
		})
	if same {
		return false
	}
	live.Spec.ClusterIP, live.Spec.Selector, live.Spec.Ports = desired.Spec.ClusterIP, desired.Spec.Selector, desired.Spec.Ports
	return true
}

// writeStatus writes the status of server, with cond, from objs and sts
// when they are not nil; nothing is written when the status is the same.
// The status is patched, with the resourceVersion it was computed from: a
// conflict (the cache is behind the controller's own last write) is
// retried on the server read from the API server.
func (r *reconciler) writeStatus(ctx context.Context, server *v1alpha1.PrometheusServer, objs *objects, sets []*appsv1.StatefulSet, cond metav1.Condition) error {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(server.Namespace), client.MatchingLabels(selectorLabels(server))); err != nil {
		return fmt.Errorf("list pods of PrometheusServer %s/%s: %w", server.Namespace, server.Name, err)
	}
	key := client.ObjectKeyFromObject(server)
	before := server.Status.ContentHash
	fresh := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if fresh {
			if err := r.reader.Get(ctx, key, server); err != nil {
				return err
			}
		}
		fresh = true
		status := r.status(server, objs, sets, cond)
		var applied metav1.Condition
		status.ReplicaStatuses, applied = configApplied(status.ContentHash, pods.Items)
		applied.ObservedGeneration = server.Generation
		if cond.Status != metav1.ConditionTrue {
			// This generation is not all written: ConfigApplied does not
			// speak for it, so that `kubectl wait
			// --for=condition=ConfigApplied` (which compares the
			// condition's observedGeneration with the generation) waits
			// instead of returning for a change that is not live.
			applied.ObservedGeneration = 0
			if was := meta.FindStatusCondition(server.Status.Conditions, conditionConfigApplied); was != nil {
				applied.ObservedGeneration = was.ObservedGeneration
			}
		}
		meta.SetStatusCondition(&status.Conditions, applied)
		r.metrics.configApplied.WithLabelValues(server.Namespace, server.Name).Set(boolGauge(applied.Status == metav1.ConditionTrue))
		if equality.Semantic.DeepEqual(status, server.Status) {
			return nil
		}
		base := server.DeepCopy()
		server.Status = status
		r.metrics.writes.WithLabelValues(v1alpha1.Kind, "patch-status").Inc()
		return r.client.Status().Patch(ctx, server, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return fmt.Errorf("update status of PrometheusServer %s/%s: %w", server.Namespace, server.Name, err)
	}
	r.observeApplied(key, before, server.Status)
	return nil
}

// observeApplied times the content of status from its write to every
// ready replica running it; before is the content hash the status showed
// until now. Only what this controller wrote is timed: content seen first
// in the status, written by an earlier controller, is not.
func (r *reconciler) observeApplied(key types.NamespacedName, before string, status v1alpha1.PrometheusServerStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.written[key]
	switch {
	case status.ContentHash != before:
		w = written{hash: status.ContentHash, at: time.Now()}
	case !ok || w.hash != status.ContentHash:
		w = written{hash: status.ContentHash, timed: true}
	}
	if !w.timed && meta.IsStatusConditionTrue(status.Conditions, conditionConfigApplied) {
		r.metrics.applySeconds.Observe(time.Since(w.at).Seconds())
		w.timed = true
	}
	r.written[key] = w
}

// maxLeftOut bounds the objects status.leftOut lists; each one's reason
// is cut as an Event's note is (maxEventNote): 50 KiB at most.
const maxLeftOut = 50

// truncate shortens s to at most n bytes, marking the cut, on a rune
// boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// status is the status of server with cond, from objs when it is not nil
// and from the live StatefulSets of its shards, sets. It sets the gauges of
// selected and rejected objects.
func (r *reconciler) status(server *v1alpha1.PrometheusServer, objs *objects, sets []*appsv1.StatefulSet, cond metav1.Condition) v1alpha1.PrometheusServerStatus {
	status := *server.Status.DeepCopy()
	status.ObservedGeneration = server.Generation
	cond.ObservedGeneration = server.Generation
	meta.SetStatusCondition(&status.Conditions, cond)
	if objs != nil {
		if objs.ConfigSecret != nil {
			status.ConfigHash = objs.ConfigHash
			status.ContentHash = objs.ContentHash
		}
		status.ServiceMonitors = v1alpha1.Selection{Selected: int32(objs.Selected.ServiceMonitors)}
		status.PodMonitors = v1alpha1.Selection{Selected: int32(objs.Selected.PodMonitors)}
		status.Probes = v1alpha1.Selection{Selected: int32(objs.Selected.Probes)}
		status.ScrapeConfigs = v1alpha1.Selection{Selected: int32(objs.Selected.ScrapeConfigs)}
		status.Rules = v1alpha1.Selection{Selected: int32(objs.Selected.Rules)}
		counts := map[string]*v1alpha1.Selection{
			monitoringv1.ServiceMonitorsKind:     &status.ServiceMonitors,
			monitoringv1.PodMonitorsKind:         &status.PodMonitors,
			monitoringv1.ProbesKind:              &status.Probes,
			monitoringv1alpha1.ScrapeConfigsKind: &status.ScrapeConfigs,
			kindPrometheusRule:                   &status.Rules,
		}
		status.LeftOut, status.LeftOutCount = nil, int32(len(objs.Rejected))
		for i, rej := range objs.Rejected {
			counts[rej.Kind].Rejected++
			if i < maxLeftOut {
				status.LeftOut = append(status.LeftOut, v1alpha1.LeftOutObject{Kind: rej.Kind, Namespace: rej.Namespace, Name: rej.Name, Reason: truncate(rej.Reason, maxEventNote)})
			}
		}
		for kind, c := range counts {
			r.metrics.selected.WithLabelValues(server.Namespace, server.Name, kind).Set(float64(c.Selected))
			r.metrics.rejected.WithLabelValues(server.Namespace, server.Name, kind).Set(float64(c.Rejected))
		}
	}
	if objs == nil && len(sets) == 0 && meta.FindStatusCondition(status.Conditions, conditionAvailable) != nil {
		return status // Nothing known about the pods: keep what was.
	}
	want, shards := ptr.Deref(server.Spec.Replicas, 1), shardCount(server)
	available := metav1.Condition{Type: conditionAvailable, Status: metav1.ConditionFalse, Reason: "NoStatefulSet",
		Message: "the StatefulSet does not exist yet", ObservedGeneration: server.Generation}
	if len(sets) > 0 {
		status.Replicas, status.ReadyReplicas, status.Shards = 0, 0, int32(len(sets))
		ready := want > 0 && len(sets) >= shards
		for _, sts := range sets {
			status.Replicas += sts.Status.Replicas
			status.ReadyReplicas += sts.Status.ReadyReplicas
			ready = ready && sts.Status.ReadyReplicas >= want
		}
		available.Reason, available.Message = "ReplicasNotReady", fmt.Sprintf("%d of %d replicas ready", status.ReadyReplicas, want*int32(shards))
		if shards > 1 {
			available.Message += fmt.Sprintf(" (%d shards of %d, %d StatefulSets)", shards, want, len(sets))
		}
		if ready {
			available.Status, available.Reason = metav1.ConditionTrue, "ReplicasReady"
		}
	}
	meta.SetStatusCondition(&status.Conditions, available)
	return status
}

// ruleCache returns the rule cache of a server.
func (r *reconciler) ruleCache(key types.NamespacedName) *ruleCache {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.caches[key]
	if c == nil {
		c = new(ruleCache)
		r.caches[key] = c
	}
	return c
}

// readRefs reads the Secrets, "namespace/name", and the ConfigMaps,
// configMapRefPrefix+"namespace/name", ids names from the API server, by
// "namespace/name"; the missing ones are left out.
func (r *reconciler) readRefs(ctx context.Context, ids []string) (map[string]*corev1.Secret, map[string]*corev1.ConfigMap, error) {
	secrets := make(map[string]*corev1.Secret, len(ids))
	configMaps := map[string]*corev1.ConfigMap{}
	for _, id := range ids {
		id, isConfigMap := strings.CutPrefix(id, configMapRefPrefix)
		ns, name, _ := strings.Cut(id, "/")
		key := types.NamespacedName{Namespace: ns, Name: name}
		if isConfigMap {
			// Read from the API server: the cache holds the controller's
			// own ConfigMaps only.
			var cm corev1.ConfigMap
			err := r.reader.Get(ctx, key, &cm)
			switch {
			case err == nil:
				configMaps[id] = &cm
			case !apierrors.IsNotFound(err):
				return nil, nil, fmt.Errorf("get ConfigMap %s: %w", id, err)
			}
			continue
		}
		var s corev1.Secret
		err := r.reader.Get(ctx, key, &s)
		switch {
		case err == nil:
			secrets[id] = &s
		case !apierrors.IsNotFound(err):
			return nil, nil, fmt.Errorf("get Secret %s: %w", id, err)
		}
	}
	return secrets, configMaps, nil
}

// refs returns the Secrets a server's last render referenced.
func (r *reconciler) refs(key types.NamespacedName) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.secretRefs[key])
}

// isSubset reports whether every element of the sorted a is in the
// sorted b.
func isSubset(a, b []string) bool {
	for _, v := range a {
		if !containsSorted(b, v) {
			return false
		}
	}
	return true
}

// remember keeps the Secrets, sorted "namespace/name", a server's render
// referenced.
func (r *reconciler) remember(key types.NamespacedName, secrets []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secretRefs[key] = secrets
}

// forget drops what is kept about a deleted server.
func (r *reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.caches, key)
	delete(r.secretRefs, key)
	delete(r.warned, key)
	delete(r.written, key)
	r.mu.Unlock()
	for _, kind := range selectedKinds() {
		r.metrics.selected.DeleteLabelValues(key.Namespace, key.Name, kind)
		r.metrics.rejected.DeleteLabelValues(key.Namespace, key.Name, kind)
	}
	r.metrics.configApplied.DeleteLabelValues(key.Namespace, key.Name)
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// warn emits a Warning Event on each rejected object, once per object
// and reason for a server, and logs it.
func (r *reconciler) warn(server *v1alpha1.PrometheusServer, in inputs, rejected []rejection) {
	key := client.ObjectKeyFromObject(server)
	r.mu.Lock()
	old := r.warned[key]
	now := make(map[rejection]struct{}, len(rejected))
	for _, rej := range rejected {
		now[rej] = struct{}{}
	}
	r.warned[key] = now
	r.mu.Unlock()
	for _, rej := range rejected {
		if _, ok := old[rej]; ok {
			continue
		}
		r.logger.Warn("rejected", "server", key, "kind", rej.Kind, "namespace", rej.Namespace, "name", rej.Name, "reason", rej.Reason)
		if obj := rejectedObject(in, rej); obj != nil {
			r.event(obj, server, "Rejected", fmt.Sprintf("left out of PrometheusServer %s: %s", key, rej.Reason))
		}
	}
}

// event emits a Warning Event about regarding.
func (r *reconciler) event(regarding, related runtime.Object, reason, note string) {
	r.recorder.Eventf(regarding, related, corev1.EventTypeWarning, reason, "Reconcile", "%s", truncate(note, maxEventNote))
}

// rejectedObject returns the candidate of in that rej names.
func rejectedObject(in inputs, rej rejection) runtime.Object {
	match := func(o metav1.Object) bool { return o.GetNamespace() == rej.Namespace && o.GetName() == rej.Name }
	switch rej.Kind {
	case monitoringv1.ServiceMonitorsKind:
		if i := slices.IndexFunc(in.ServiceMonitors, func(o *monitoringv1.ServiceMonitor) bool { return match(o) }); i >= 0 {
			return in.ServiceMonitors[i]
		}
	case monitoringv1.PodMonitorsKind:
		if i := slices.IndexFunc(in.PodMonitors, func(o *monitoringv1.PodMonitor) bool { return match(o) }); i >= 0 {
			return in.PodMonitors[i]
		}
	case monitoringv1.ProbesKind:
		if i := slices.IndexFunc(in.Probes, func(o *monitoringv1.Probe) bool { return match(o) }); i >= 0 {
			return in.Probes[i]
		}
	case monitoringv1alpha1.ScrapeConfigsKind:
		if i := slices.IndexFunc(in.ScrapeConfigs, func(o *monitoringv1alpha1.ScrapeConfig) bool { return match(o) }); i >= 0 {
			return in.ScrapeConfigs[i]
		}
	case kindPrometheusRule:
		if i := slices.IndexFunc(in.Rules, func(o *monitoringv1.PrometheusRule) bool { return match(o) }); i >= 0 {
			return in.Rules[i]
		}
	}
	return nil
}

// ownerServer returns the PrometheusServer controlling obj, if any.
func ownerServer(obj metav1.Object) *types.NamespacedName {
	c := metav1.GetControllerOf(obj)
	if c == nil || c.Kind != v1alpha1.Kind || c.APIVersion != v1alpha1.GroupVersion().String() {
		return nil
	}
	return &types.NamespacedName{Namespace: obj.GetNamespace(), Name: c.Name}
}

func containsSorted(s []string, v string) bool {
	_, ok := slices.BinarySearch(s, v)
	return ok
}

func pointers[T any](items []T) []*T {
	p := make([]*T, len(items))
	for i := range items {
		p[i] = &items[i]
	}
	return p
}
