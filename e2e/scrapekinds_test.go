package e2e

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// prober answers probes at path as blackbox_exporter does, and records the
// query of each.
type prober struct {
	*httptest.Server
	mu      sync.Mutex
	queries []string // Encoded, sorted by key; each once.
}

func startProber(t testing.TB, path string) *prober {
	t.Helper()
	p := &prober{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Encode()
		p.mu.Lock()
		if !slices.Contains(p.queries, q) {
			p.queries = append(p.queries, q)
		}
		p.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		fmt.Fprintln(w, "probe_success 1")
	})
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

// seen returns the queries the prober answered.
func (p *prober) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.queries)
}

// target is an active target as Prometheus' /api/v1/targets shows it.
type target struct {
	ScrapePool string            `json:"scrapePool"`
	Labels     map[string]string `json:"labels"`
	Health     string            `json:"health"`
	LastError  string            `json:"lastError"`
}

// waitTargets waits until Prometheus' active targets of each scrape pool
// of want are one target with want's labels, up, and the series up of
// each is 1.
func (e *examplePipeline) waitTargets(t testing.TB, want map[string]map[string]string) {
	t.Helper()
	eventually(t, "targets up", func() error {
		var targets struct {
			ActiveTargets []target `json:"activeTargets"`
		}
		if err := getJSON(t.Context(), e.promURL+"/api/v1/targets?state=active", &targets); err != nil {
			return err
		}
		var errs []error
		for pool, labels := range want {
			var got []target
			for _, tg := range targets.ActiveTargets {
				if tg.ScrapePool == pool {
					got = append(got, tg)
				}
			}
			switch {
			case len(got) != 1:
				errs = append(errs, fmt.Errorf("scrape pool %s: %d targets %+v", pool, len(got), got))
			case !maps.Equal(got[0].Labels, labels):
				errs = append(errs, fmt.Errorf("scrape pool %s: labels %v, want %v", pool, got[0].Labels, labels))
			case got[0].Health != "up":
				errs = append(errs, fmt.Errorf("scrape pool %s: health %q: %s", pool, got[0].Health, got[0].LastError))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		return e.upIsOne(t, slices.Collect(maps.Keys(want)))
	})
}

// upIsOne returns nil when the latest sample of up is 1 for each job of
// jobs.
func (e *examplePipeline) upIsOne(t testing.TB, jobs []string) error {
	var vector struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := getJSON(t.Context(), e.promURL+"/api/v1/query?query=up", &vector); err != nil {
		return err
	}
	up := map[string]string{}
	for _, r := range vector.Result {
		v, _ := r.Value[1].(string)
		up[r.Metric["job"]] = v
	}
	for _, job := range jobs {
		if up[job] != "1" {
			return fmt.Errorf("up{job=%q} is %q", job, up[job])
		}
	}
	return nil
}

// testScrapeKinds selects a Probe and ScrapeConfigs with the example
// server, which enforces a namespace label, and checks that the real
// Prometheus scrapes their targets with the labels prometheus-operator
// gives them: a prober answering the Probe's target and module, the
// Prometheus itself as a static target, and a pod the API server lists
// through Kubernetes service discovery.
func testScrapeKinds(t *testing.T, e *examplePipeline) {
	promAddr := e.pod.ports[e.pod.containerPort(t, "prometheus", "web")]
	_, port, err := net.SplitHostPort(promAddr)
	require.NoError(t, err)
	promPort, err := strconv.ParseInt(port, 10, 32)
	require.NoError(t, err)
	team := map[string]string{"team": "example"}
	prober := startProber(t, "/blackbox/probe")
	c := e.cl.c

	require.NoError(t, c.Create(t.Context(), &monitoringv1.Probe{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sites", Labels: team},
		Spec: monitoringv1.ProbeSpec{
			Module:     "http_2xx",
			Interval:   "1s",
			ProberSpec: monitoringv1.ProberSpec{URL: prober.Listener.Addr().String(), Path: "/blackbox/probe"},
			Targets:    monitoringv1.ProbeTargets{StaticConfig: &monitoringv1.ProbeTargetStaticConfig{Targets: []string{"https://probe.example.com"}, Labels: map[string]string{"env": "e2e"}}},
		},
	}))
	require.NoError(t, c.Create(t.Context(), &monitoringv1alpha1.ScrapeConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "self", Labels: team},
		Spec: monitoringv1alpha1.ScrapeConfigSpec{
			ScrapeInterval: ptr.To[monitoringv1.Duration]("1s"),
			StaticConfigs:  []monitoringv1alpha1.StaticConfig{{Targets: []monitoringv1alpha1.Target{monitoringv1alpha1.Target(promAddr)}, Labels: map[string]string{"role": "self"}}},
		},
	}))

	// Kubernetes service discovery of pods, with the token of the
	// example's service account and the API server's CA: a pod listening
	// where the Prometheus does.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "prometheus"}}
	token := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	require.NoError(t, c.SubResource("token").Create(t.Context(), sa, token))
	require.NoError(t, c.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes-sd"},
		StringData: map[string]string{"token": token.Status.Token, "ca.crt": string(e.cl.ca)},
	}))
	scraped := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "scraped", Labels: map[string]string{"app": "scraped"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "app",
			Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: int32(promPort)}},
		}}},
	}
	require.NoError(t, c.Create(t.Context(), scraped))
	scraped.Status.PodIP, scraped.Status.PodIPs = "127.0.0.1", []corev1.PodIP{{IP: "127.0.0.1"}}
	require.NoError(t, c.Status().Update(t.Context(), scraped))
	secret := func(key string) *corev1.SecretKeySelector {
		return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "kubernetes-sd"}, Key: key}
	}
	require.NoError(t, c.Create(t.Context(), &monitoringv1alpha1.ScrapeConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pods", Labels: team},
		Spec: monitoringv1alpha1.ScrapeConfigSpec{
			ScrapeInterval: ptr.To[monitoringv1.Duration]("1s"),
			KubernetesSDConfigs: []monitoringv1alpha1.KubernetesSDConfig{{
				APIServer:     ptr.To(e.cl.host),
				Role:          monitoringv1alpha1.KubernetesRolePod,
				Namespaces:    &monitoringv1alpha1.NamespaceDiscovery{Names: []string{"default"}},
				Selectors:     []monitoringv1alpha1.K8SSelectorConfig{{Role: monitoringv1alpha1.KubernetesRolePod, Label: ptr.To("app=scraped")}},
				Authorization: &monitoringv1.SafeAuthorization{Type: "Bearer", Credentials: secret("token")},
				TLSConfig:     &monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{Secret: secret("ca.crt")}},
			}},
			RelabelConfigs: []monitoringv1.RelabelConfig{{SourceLabels: []monitoringv1.LabelName{"__meta_kubernetes_pod_name"}, TargetLabel: "pod"}},
		},
	}))

	// Until now Prometheus had no sample to send to the example's remote
	// write endpoint, which does not exist: with samples pending, it would
	// retry for its flush deadline (a minute) when stopped. The endpoint
	// goes with the change that brings the first targets.
	e.cl.kubectl(t, "patch", "promsrv", "example", "--type=merge", "-p",
		`{"spec":{"probeSelector":{"matchLabels":{"team":"example"}},"scrapeConfigSelector":{"matchLabels":{"team":"example"}},`+
			`"enforcedNamespaceLabel":"tenant","remoteWrite":null}}`)
	e.waitTargets(t, map[string]map[string]string{
		"probe/default/sites": {
			"job": "probe/default/sites", "instance": "https://probe.example.com",
			"env": "e2e", "namespace": "default", "tenant": "default",
		},
		"scrapeConfig/default/self": {
			"job": "scrapeConfig/default/self", "instance": promAddr, "role": "self", "tenant": "default",
		},
		"scrapeConfig/default/pods": {
			"job": "scrapeConfig/default/pods", "instance": promAddr, "pod": "scraped", "tenant": "default",
		},
	})
	require.Equal(t, []string{url.Values{"module": {"http_2xx"}, "target": {"https://probe.example.com"}}.Encode()}, prober.seen(),
		"the prober is asked for the Probe's target with its module")
}
