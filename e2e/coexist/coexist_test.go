package coexist

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/podreload/podreload/controller"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/audit"
	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/operator"
	"github.com/podreload/podreload/internal/testenv/wait"
)

const (
	// editFor is how long both controllers run through edits: issue 26's
	// acceptance asks 5 minutes. durationEnv shortens it for local
	// iteration only; `make test` never sets it.
	editFor     = 5 * time.Minute
	durationEnv = "PODRELOAD_COEXIST_DURATION"
	// ns holds every object of the test.
	ns = "coexist"
	// ours is the Prometheus handed to podreload (annotated with
	// controllerID), theirs the one prometheus-operator keeps.
	ours, theirs = "ours", "theirs"
	// late is podreload's too, created annotated once ours is taken over:
	// podreload writes its objects from the start, and adds it to the
	// owner references of the Service the controllers share.
	late         = "late"
	controllerID = "podreload"
	// testAgent is the user agent of the test's own writes.
	testAgent = "coexist-test"
	// shared is the governing Service both controllers write, by design.
	shared = "prometheus-operated"
	// timeout bounds every wait for a controller.
	timeout = 2 * time.Minute
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	goleak.VerifyTestMain(m, append(controlplane.InformerLeaks(), goleak.IgnoreCurrent(),
		// client-go's and klog's background goroutines outlive the clients.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))...)
}

// auditPolicy records every write, without its body, once answered.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
  - level: Metadata
    verbs: ["create", "update", "patch", "delete", "deletecollection"]
  - level: None
`

// TestCoexist is the acceptance of issue 26 where both controllers run:
// prometheus-operator's operator (default, empty --controller-id) keeps
// the Prometheus theirs, podreload's controller takes over ours after the
// operator had written its objects, and runs late from its start; for
// minutes of edits to both kinds of objects (the Prometheus specs, their
// rules, monitors and Secrets) neither writes the other's objects: the
// operator's field manager has no field of ours' objects written after the
// takeover settled, podreload's has none of theirs' (on the governing
// Service they share, only late's owner reference, which the operator's
// rewrites keep), and the API server's audit log shows no write of either
// on the other's objects. Both still render the last edits.
func TestCoexist(t *testing.T) {
	duration := editFor
	if v := os.Getenv(durationEnv); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, durationEnv)
		duration = d
	}
	dir := t.TempDir()
	policy, auditLog := filepath.Join(dir, "audit-policy.yaml"), filepath.Join(dir, "audit.log")
	require.NoError(t, os.WriteFile(policy, []byte(auditPolicy), 0o600))
	cp := controlplane.StartWithFlags(t, map[string]string{
		"audit-policy-file": policy, "audit-log-path": auditLog, "audit-log-format": "json",
	}, filepath.Join("..", "..", "deploy", "crds"))
	c := newClient(t, cp.Config)

	require.NoError(t, c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	for _, name := range []string{theirs, ours} {
		createObjects(t, c, name, "")
	}
	op := operator.Start(t, cp.Kubeconfig, "")
	// The operator writes for both first, so that ours' objects are
	// adopted.
	for _, name := range []string{theirs, ours} {
		waitWrittenBy(t, c, name, operator.FieldManager)
	}

	startController(t, cp.Config)
	patch(t, c, monitoringv1.PrometheusesKind, ours, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, takeover.AnnotationControllerID, controllerID))
	waitTakenOver(t, c)
	settled := time.Now()
	t.Logf("taken over at %s", settled.Format(time.RFC3339Nano))
	createObjects(t, c, late, controllerID)
	waitSharedOwner(t, c, late)

	last := edit(t, c, duration)
	for _, name := range []string{theirs, ours} {
		waitRendered(t, c, name, last)
	}

	t.Run("managed fields", func(t *testing.T) { checkManagedFields(t, c, settled) })
	t.Run("audit log", func(t *testing.T) { checkAudit(t, auditLog, settled) })
	t.Run("the operator was never denied", func(t *testing.T) {
		require.NotContains(t, strings.ToLower(op.Logs()), "forbidden")
	})
}

// newClient returns a client of the administrator's config, with the
// test's user agent.
func newClient(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, monitoringv1.AddToScheme(scheme))
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = testAgent
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c
}

// objects are, for a Prometheus NAME, the Secret its ServiceMonitor's
// basic authentication references, the ServiceMonitor, a PodMonitor and a
// PrometheusRule it selects, and the Prometheus.
const objects = `apiVersion: v1
kind: Secret
metadata: {name: NAME-auth, namespace: NS}
stringData: {username: scraper, password: "0"}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: NAME, namespace: NS, labels: {prometheus: NAME}}
spec:
  selector: {matchLabels: {app: NAME}}
  endpoints:
    - port: web
      interval: 10s
      basicAuth:
        username: {name: NAME-auth, key: username}
        password: {name: NAME-auth, key: password}
---
apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata: {name: NAME, namespace: NS, labels: {prometheus: NAME}}
spec:
  selector: {matchLabels: {app: NAME}}
  podMetricsEndpoints: [{port: web, interval: 10s}]
---
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: NAME, namespace: NS, labels: {prometheus: NAME}}
spec:
  groups: [{name: coexist, rules: [{record: "coexist:NAME:edit", expr: "vector(0)"}]}]
---
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: NAME, namespace: NS, annotations: ANNOTATIONS}
spec:
  replicas: 1
  image: quay.io/prometheus/prometheus:v3.15.0
  version: v3.15.0
  serviceAccountName: prometheus
  serviceMonitorSelector: {matchLabels: {prometheus: NAME}}
  podMonitorSelector: {matchLabels: {prometheus: NAME}}
  ruleSelector: {matchLabels: {prometheus: NAME}}
  scrapeInterval: 30s
  evaluationInterval: 30s
  externalLabels: {edit: "0"}
`

// createObjects creates the objects of the Prometheus name, handed to
// the controller id (none when empty).
func createObjects(t testing.TB, c client.Client, name, id string) {
	t.Helper()
	annotations := "{}"
	if id != "" {
		annotations = fmt.Sprintf("{%q: %q}", takeover.AnnotationControllerID, id)
	}
	s := strings.NewReplacer("NAME", name, "NS", ns, "ANNOTATIONS", annotations).Replace(objects)
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(s), 4096)
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err)
		require.NoError(t, c.Create(t.Context(), obj), "create %s %s", obj.GetKind(), obj.GetName())
	}
}

// startController runs podreload's controller in the test's process, as
// cmd/controller does: taking over the Prometheus objects handed to
// controllerID, with its own user agent (its field manager is
// controller.Name whatever the agent). It stops with the test.
func startController(t testing.TB, cfg *rest.Config) {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = controller.Name + "/coexist"
	ctrl, err := controller.New(nil, prometheus.NewRegistry(), controller.Options{
		Config:        cfg,
		Prometheus:    promserver.WorkloadOptions{DefaultPrometheusImage: "quay.io/prometheus/prometheus:v3.15.0"},
		ReloaderImage: "ghcr.io/podreload/podreload:coexist",
		TakeOver:      &takeover.Options{ControllerID: controllerID},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done, "the controller's Run")
	})
	eventually(t, "the controller ready", func() error {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("the controller stopped: %w", err)
		default:
		}
		return ctrl.Ready()
	})
}

// waitWrittenBy waits until manager wrote the StatefulSet, the config
// Secret and the rule ConfigMap of the Prometheus name.
func waitWrittenBy(t testing.TB, c client.Client, name, manager string) {
	t.Helper()
	eventually(t, "the objects of Prometheus "+name+" written by "+manager, func() error {
		for _, obj := range []client.Object{
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-" + name}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-" + name}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-" + name + "-rulefiles-0"}},
		} {
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: obj.GetName()}, obj); err != nil {
				return err
			}
			if !slices.ContainsFunc(obj.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool { return m.Manager == manager }) {
				return fmt.Errorf("%T %s: no field of %s", obj, obj.GetName(), manager)
			}
		}
		return nil
	})
}

// waitTakenOver waits until the controller adopted the objects of ours:
// the StatefulSet runs its sidecar and is no longer the operator's, and it
// wrote the config Secret, the rule ConfigMap and the status.
func waitTakenOver(t testing.TB, c client.Client) {
	t.Helper()
	waitWrittenBy(t, c, ours, controller.Name)
	eventually(t, "ours taken over", func() error {
		var sts appsv1.StatefulSet
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "prometheus-" + ours}, &sts); err != nil {
			return err
		}
		if !slices.ContainsFunc(sts.Spec.Template.Spec.Containers, func(c corev1.Container) bool {
			return c.Name == "config-reloader" && strings.Contains(c.Image, "podreload")
		}) {
			return errors.New("the StatefulSet does not run podreload's sidecar")
		}
		if slices.ContainsFunc(sts.ManagedFields, func(m metav1.ManagedFieldsEntry) bool { return m.Manager == operator.FieldManager }) {
			return errors.New("the operator still manages fields of the StatefulSet")
		}
		var p monitoringv1.Prometheus
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: ours}, &p); err != nil {
			return err
		}
		if !slices.ContainsFunc(p.ManagedFields, func(m metav1.ManagedFieldsEntry) bool {
			return m.Manager == controller.Name && m.Subresource == "status"
		}) {
			return errors.New("no status written by the controller")
		}
		return nil
	})
}

// waitSharedOwner waits until podreload added the Prometheus name to the
// owner references of the shared Service.
func waitSharedOwner(t testing.TB, c client.Client, name string) {
	t.Helper()
	var p monitoringv1.Prometheus
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &p))
	eventually(t, "Prometheus "+name+" an owner of Service "+shared, func() error {
		var svc corev1.Service
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: shared}, &svc); err != nil {
			return err
		}
		if !slices.ContainsFunc(svc.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == p.UID }) {
			return fmt.Errorf("owner references %v", svc.OwnerReferences)
		}
		return nil
	})
}

// edit edits, every second for d, the objects of both Prometheus: their
// spec (scrapeInterval, replicas, externalLabels), rules, monitors and
// Secrets, in turn; it returns the number of the last edit, which the
// external label edit and the rule's expression vector(N) carry.
func edit(t testing.TB, c client.Client, d time.Duration) int {
	t.Helper()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	end := time.After(d)
	var i int
	for {
		i++
		for _, name := range []string{theirs, ours} {
			patch(t, c, monitoringv1.PrometheusesKind, name, fmt.Sprintf(`{"spec":{"scrapeInterval":"%ds","replicas":%d,"externalLabels":{"edit":"%d"}}}`, 10+i%20, 1+i%3, i))
			patch(t, c, monitoringv1.PrometheusRuleKind, name, fmt.Sprintf(`{"spec":{"groups":[{"name":"coexist","rules":[{"record":"coexist:%s:edit","expr":"vector(%d)"}]}]}}`, name, i))
			switch i % 3 {
			case 0:
				patch(t, c, monitoringv1.ServiceMonitorsKind, name, fmt.Sprintf(`{"spec":{"endpoints":[{"port":"web","interval":"%ds","basicAuth":{"username":{"name":"%s-auth","key":"username"},"password":{"name":"%s-auth","key":"password"}}}]}}`, 5+i%10, name, name))
			case 1:
				patch(t, c, monitoringv1.PodMonitorsKind, name, fmt.Sprintf(`{"spec":{"podMetricsEndpoints":[{"port":"web","interval":"%ds"}]}}`, 5+i%10))
			case 2:
				patch(t, c, "Secret", name+"-auth", fmt.Sprintf(`{"stringData":{"password":"%d"}}`, i))
			}
		}
		select {
		case <-end:
			t.Logf("%d rounds of edits in %s", i, d)
			return i
		case <-tick.C:
		}
	}
}

// patch merges the JSON patch into the object kind name of ns: a Secret
// or a kind of monitoring.coreos.com/v1.
func patch(t testing.TB, c client.Client, kind, name, p string) {
	t.Helper()
	gvk := monitoringv1.SchemeGroupVersion.WithKind(kind)
	if kind == "Secret" {
		gvk = corev1.SchemeGroupVersion.WithKind(kind)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(ns)
	obj.SetName(name)
	require.NoError(t, c.Patch(t.Context(), obj, client.RawPatch(types.MergePatchType, []byte(p))), "patch %s %s", gvk.Kind, name)
}

// waitRendered waits until the controller of the Prometheus name rendered
// the last edit n: the external label in its configuration, vector(n) in
// its rules.
func waitRendered(t testing.TB, c client.Client, name string, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("edit %d rendered for %s", n, name), func() error {
		var secret corev1.Secret
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "prometheus-" + name}, &secret); err != nil {
			return err
		}
		zr, err := gzip.NewReader(bytes.NewReader(secret.Data["prometheus.yaml.gz"]))
		if err != nil {
			return err
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			return err
		}
		var config struct {
			Global struct {
				ExternalLabels map[string]string `json:"external_labels"`
			} `json:"global"`
		}
		if err := sigsyaml.Unmarshal(b, &config); err != nil {
			return err
		}
		if got := config.Global.ExternalLabels["edit"]; got != fmt.Sprint(n) {
			return fmt.Errorf("external label edit is %q", got)
		}
		var rules corev1.ConfigMap
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "prometheus-" + name + "-rulefiles-0"}, &rules); err != nil {
			return err
		}
		for _, v := range rules.Data {
			if strings.Contains(v, fmt.Sprintf("vector(%d)", n)) {
				return nil
			}
		}
		return fmt.Errorf("no vector(%d) in the rules: %v", n, rules.Data)
	})
}

// checkManagedFields checks the field managers of every object the
// controllers write in ns: the operator has no field of ours' objects
// written since settled, podreload none of theirs', and on the governing
// Service they share, podreload only its owner reference.
func checkManagedFields(t *testing.T, c client.Client, settled time.Time) {
	// Managed fields' times are whole seconds: from the next one on, the
	// operator's are after settled; the audit log has the second before.
	after := settled.Truncate(time.Second).Add(time.Second)
	uids := map[types.UID]string{}
	var proms monitoringv1.PrometheusList
	require.NoError(t, c.List(t.Context(), &proms, client.InNamespace(ns)))
	for _, p := range proms.Items {
		uids[p.UID] = sideOfName(p.Name)
	}
	var objs []*unstructured.Unstructured
	for _, list := range []client.ObjectList{
		&monitoringv1.PrometheusList{},
		&appsv1.StatefulSetList{}, &corev1.SecretList{}, &corev1.ConfigMapList{}, &corev1.ServiceList{},
		&rbacv1.RoleList{}, &rbacv1.RoleBindingList{}, &corev1.ServiceAccountList{},
		&monitoringv1.ServiceMonitorList{}, &monitoringv1.PodMonitorList{}, &monitoringv1.PrometheusRuleList{},
	} {
		require.NoError(t, c.List(t.Context(), list, client.InNamespace(ns)))
		items, err := listItems(list)
		require.NoError(t, err)
		objs = append(objs, items...)
	}
	counts := map[string]int{}
	var kept, wrong []string
	sharedByUs := false
	for _, obj := range objs {
		side := sideOf(obj, uids)
		if obj.GetName() == shared {
			// prometheus-operator rewrites it on each reconciliation of
			// theirs, keeping the owners podreload added.
			require.Equal(t, shared, side, "Service %s: owned by both sides: %v", shared, obj.GetOwnerReferences())
			require.Len(t, obj.GetOwnerReferences(), len(uids), "Service %s: every Prometheus an owner", shared)
		}
		what := fmt.Sprintf("%s %s (%s)", obj.GetKind(), obj.GetName(), cmp.Or(side, "neither"))
		for _, m := range obj.GetManagedFields() {
			counts[side+" by "+m.Manager]++
			switch {
			case side == ours && m.Manager == operator.FieldManager:
				kept = append(kept, fmt.Sprintf("%s at %s", what, m.Time.Format(time.RFC3339)))
				if !m.Time.Before(&metav1.Time{Time: after}) {
					wrong = append(wrong, fmt.Sprintf("%s: the operator wrote fields at %s, after the takeover settled (%s): %s", what, m.Time, settled.Format(time.RFC3339Nano), m.FieldsV1.GetRawString()))
				}
			case side == theirs && m.Manager == controller.Name:
				wrong = append(wrong, fmt.Sprintf("%s: podreload wrote fields of the operator's object: %s", what, m.FieldsV1.GetRawString()))
			case side == shared && m.Manager == controller.Name:
				sharedByUs = true
				var fields map[string]any
				require.NoError(t, json.Unmarshal(m.FieldsV1.GetRawBytes(), &fields))
				t.Logf("%s: podreload's fields: %s", what, m.FieldsV1.GetRawString())
				require.Equal(t, []string{"f:metadata"}, mapKeys(fields), "%s: podreload's fields beyond the owner references", what)
				metadata, _ := fields["f:metadata"].(map[string]any)
				require.Equal(t, []string{"f:ownerReferences"}, mapKeys(metadata), "%s: podreload's fields beyond the owner references", what)
			}
		}
	}
	t.Logf("managed fields entries, by side and manager: %v", counts)
	t.Logf("ours' objects with fields of the operator, written before the takeover settled: %v", kept)
	require.Empty(t, wrong, "fields written on the other controller's objects")
	require.Positive(t, counts[ours+" by "+controller.Name], "podreload wrote ours")
	require.True(t, sharedByUs, "podreload has no field of Service %s: it added %s to its owner references", shared, late)
	require.Positive(t, counts[theirs+" by "+operator.FieldManager], "the operator wrote theirs")
}

// listItems returns the items of list, each with its kind.
func listItems(list client.ObjectList) ([]*unstructured.Unstructured, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	kind := strings.TrimSuffix(reflect.TypeOf(list).Elem().Name(), "List")
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, item := range items {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(item)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetKind(kind)
		out = append(out, u)
	}
	return out, nil
}

// sideOfName tells whose the Prometheus name is: ours (ours and late)
// or theirs.
func sideOfName(name string) string {
	if name == late {
		return ours
	}
	return name
}

// sideOf tells whose obj is, by the sides of the Prometheus objects (uids):
// ours or theirs (a Prometheus itself, or owned by the Prometheus objects
// of one side), shared (owned by both sides), or "" (neither: what the
// test wrote).
func sideOf(obj client.Object, uids map[types.UID]string) string {
	if side, ok := uids[obj.GetUID()]; ok {
		return side
	}
	var owners []string
	for _, o := range obj.GetOwnerReferences() {
		if side, ok := uids[o.UID]; ok && !slices.Contains(owners, side) {
			owners = append(owners, side)
		}
	}
	switch len(owners) {
	case 1:
		return owners[0]
	case 2:
		return shared
	}
	return ""
}

// mapKeys returns the sorted keys of m.
func mapKeys(m map[string]any) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkAudit counts the writes of the audit log file by writer (the operator's
// ServiceAccount, podreload's user agent, the test) and side of the object
// written, prints them, and checks that the operator wrote nothing of ours
// after settled and podreload nothing of theirs.
func checkAudit(t *testing.T, file string, settled time.Time) {
	counts := map[string]int{}
	var wrong []string
	operatorUser := "system:serviceaccount:" + operator.Namespace + ":" + operator.ServiceAccount
	for _, e := range audit.Read(t, file, ns) {
		if !slices.Contains([]string{"create", "update", "patch", "delete", "deletecollection"}, e.Verb) || e.ObjectRef == nil || e.ObjectRef.Namespace != ns {
			continue
		}
		var who string
		switch {
		case e.User.Username == operatorUser:
			who = "prometheus-operator"
		case strings.HasPrefix(e.UserAgent, controller.Name+"/"):
			who = controller.Name
		case e.UserAgent == testAgent:
			who = "test"
		default:
			who = e.User.Username + " " + e.UserAgent
		}
		side := auditSide(e.ObjectRef.Resource, e.ObjectRef.Name)
		after := ""
		if e.StageTimestamp.After(settled) {
			after = ", after the takeover"
		}
		refused := ""
		if e.ResponseStatus != nil && e.ResponseStatus.Code >= 400 {
			refused = fmt.Sprintf(", refused (%d)", e.ResponseStatus.Code)
		}
		key := fmt.Sprintf("%s on %s%s%s", who, cmp.Or(side, "neither"), after, refused)
		counts[key]++
		what := fmt.Sprintf("%s %s %s %s at %s%s", who, e.Verb, path.Join(e.ObjectRef.Resource, e.ObjectRef.Subresource), e.ObjectRef.Name, e.StageTimestamp.Format(time.RFC3339Nano), refused)
		switch {
		case who == "prometheus-operator" && side == ours && after != "":
			wrong = append(wrong, "the operator wrote ours' object after the takeover settled: "+what)
		case who == controller.Name && side == theirs:
			wrong = append(wrong, "podreload wrote the operator's object: "+what)
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %-60s %6d", k, counts[k])
	}
	t.Logf("writes in namespace %s by writer and side (audit log):%s", ns, b.String())
	require.Empty(t, wrong, "writes on the other controller's objects")
	require.Positive(t, counts[controller.Name+" on "+ours+", after the takeover"], "podreload wrote ours during the edits")
	require.Positive(t, counts["prometheus-operator on "+theirs+", after the takeover"], "the operator wrote theirs during the edits")
}

// auditSide tells, by its name, whose the object of an audit event is:
// the Prometheus, the objects named after it (prometheus-<name>...) and
// its Events (<name>.<id>).
func auditSide(resource, name string) string {
	if name == shared {
		return shared
	}
	for _, p := range []string{ours, late, theirs} {
		switch {
		case resource == "prometheuses" && name == p,
			resource == "events" && strings.HasPrefix(name, p+"."),
			name == "prometheus-"+p || strings.HasPrefix(name, "prometheus-"+p+"-"):
			return sideOfName(p)
		}
	}
	return ""
}

// eventually calls cond until it returns nil, and fails the test with
// what and cond's last error after timeout.
func eventually(t testing.TB, what string, cond func() error) {
	t.Helper()
	wait.Until(t, timeout, 200*time.Millisecond, what, cond)
}
