package remote

import (
	"fmt"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	yaml "go.yaml.in/yaml/v2"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promcfg/credential"
	"github.com/podreload/podreload/controller/promyaml"
)

// RemoteWrites renders the remote_write section of rws, as
// prometheus-operator's generator (GenerateRemoteWriteConfig) renders it.
func (r *Renderer) RemoteWrites(rws []v1alpha1.RemoteWriteSpec) ([]yaml.MapSlice, error) {
	out := make([]yaml.MapSlice, 0, len(rws))
	names := map[string]bool{}
	ns := r.Namespace
	for i, rw := range rws {
		path := fmt.Sprintf("spec.remoteWrite[%d]", i)
		u, err := credential.ParseURL(rw.URL)
		if err != nil {
			return nil, fmt.Errorf("%s.url: %w", path, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("%s.url: %q is not an http or https URL", path, credential.ShownURL(u))
		}
		timeout := string(ptr.Deref(rw.RemoteTimeout, defaultRemoteTimeout))
		if _, err := model.ParseDuration(timeout); err != nil {
			return nil, fmt.Errorf("%s.remoteTimeout: %w", path, err)
		}
		cfg := yaml.MapSlice{
			{Key: "url", Value: rw.URL},
			{Key: "remote_timeout", Value: timeout},
		}
		if rw.Name != "" {
			if names[rw.Name] {
				return nil, fmt.Errorf("%s.name: %q is used twice", path, rw.Name)
			}
			names[rw.Name] = true
			if r.AtLeast(2, 15) {
				cfg = append(cfg, yaml.MapItem{Key: "name", Value: rw.Name})
			}
		}
		message, err := r.protobufMessage(path, rw.MessageVersion)
		if err != nil {
			return nil, err
		}
		cfg = append(cfg, message...)
		tuning, queue, err := r.remoteWriteTuning(path, rw)
		if err != nil {
			return nil, err
		}
		cfg = append(cfg, tuning...)
		if err := ExclusiveAuth(path, []string{"basicAuth", "oauth2", "authorization", "sigv4", "azureAd"},
			rw.BasicAuth != nil, rw.OAuth2 != nil, rw.Authorization != nil, rw.Sigv4 != nil, rw.AzureAD != nil); err != nil {
			return nil, err
		}
		if rw.BasicAuth != nil {
			ba, err := r.Cred.BasicAuth(ns, path+".basicAuth", rw.BasicAuth)
			if err != nil {
				return nil, err
			}
			cfg = append(cfg, ba)
		}
		cfg = append(cfg, BearerToken(rw.BearerToken, rw.BearerTokenFile)...)
		if a := rw.Authorization; a != nil {
			auth, err := r.Authorization(path+".authorization", a)
			if err != nil {
				return nil, err
			}
			cfg = append(cfg, auth)
		}
		client, err := r.remoteWriteClient(path, rw)
		if err != nil {
			return nil, err
		}
		cfg = append(cfg, client...)
		out = append(out, append(cfg, queue...))
	}
	return out, nil
}

// Authorization renders the authorization a at path, whose credentials
// come from a Secret or a file, of a remote write, a remote read or
// spec.apiserverConfig. Before Prometheus 2.26, which has none,
// prometheus-operator's generator fails on it (addAuthorizationToYaml
// panics): it is refused.
func (r *Renderer) Authorization(path string, a *monitoringv1.Authorization) (yaml.MapItem, error) {
	if !r.AtLeast(2, 26) {
		return yaml.MapItem{}, fmt.Errorf("%s: requires Prometheus 2.26 or later", path)
	}
	if a.Credentials != nil && a.CredentialsFile != "" {
		return yaml.MapItem{}, fmt.Errorf("%s: credentials and credentialsFile are mutually exclusive", path)
	}
	auth, err := r.Cred.Authorization(r.Namespace, path, &a.SafeAuthorization, a.CredentialsFile != "")
	if err != nil {
		return yaml.MapItem{}, err
	}
	if a.CredentialsFile != "" {
		auth.Value = append(auth.Value.(yaml.MapSlice), yaml.MapItem{Key: "credentials_file", Value: a.CredentialsFile})
	}
	return auth, nil
}

// ExclusiveAuth refuses, at path, more than one of the ways to
// authenticate fields set (set[i] for fields[i]), naming those set.
func ExclusiveAuth(path string, fields []string, set ...bool) error {
	var names []string
	for i, ok := range set {
		if ok {
			names = append(names, fields[i])
		}
	}
	if len(names) < 2 {
		return nil
	}
	return fmt.Errorf("%s: %s and %s are mutually exclusive", path, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
}

// BearerToken renders the deprecated bearer_token and bearer_token_file,
// those that are set.
func BearerToken(token, file string) yaml.MapSlice {
	var cfg yaml.MapSlice
	if token != "" {
		cfg = append(cfg, yaml.MapItem{Key: "bearer_token", Value: token})
	}
	if file != "" {
		cfg = append(cfg, yaml.MapItem{Key: "bearer_token_file", Value: file})
	}
	return cfg
}

// remoteWriteTuning renders the settings of the remote write endpoint rw
// at path beyond its URL, name and credentials, as prometheus-operator
// renders them, each for the Prometheus versions that have it: tuning
// goes after the name (headers from 2.15, send_exemplars from 2.27,
// send_native_histograms from 2.40, write_relabel_configs), queue after
// the credentials (queue_config, metadata_config from 2.23,
// round_robin_dns from 3.1).
func (r *Renderer) remoteWriteTuning(path string, rw v1alpha1.RemoteWriteSpec) (tuning, queue yaml.MapSlice, err error) {
	if len(rw.Headers) > 0 && r.AtLeast(2, 15) {
		tuning = append(tuning, yaml.MapItem{Key: "headers", Value: promyaml.SortedMap(rw.Headers)})
	}
	if rw.SendExemplars != nil && r.AtLeast(2, 27) {
		tuning = append(tuning, yaml.MapItem{Key: "send_exemplars", Value: *rw.SendExemplars})
	}
	if rw.SendNativeHistograms != nil && r.AtLeast(2, 40) {
		tuning = append(tuning, yaml.MapItem{Key: "send_native_histograms", Value: *rw.SendNativeHistograms})
	}
	var relabelings []yaml.MapSlice
	for i := range rw.WriteRelabelConfigs {
		rc, err := r.Relabel.Rule(fmt.Sprintf("%s.writeRelabelConfigs[%d]", path, i), &rw.WriteRelabelConfigs[i])
		if err != nil {
			return nil, nil, err
		}
		relabelings = append(relabelings, rc)
	}
	if len(relabelings) > 0 {
		tuning = append(tuning, yaml.MapItem{Key: "write_relabel_configs", Value: relabelings})
	}

	if q := rw.QueueConfig; q != nil {
		qc, err := r.queueConfig(path+".queueConfig", q)
		if err != nil {
			return nil, nil, err
		}
		queue = append(queue, yaml.MapItem{Key: "queue_config", Value: qc})
	}
	if m := rw.MetadataConfig; m != nil {
		// Prometheus sends no metadata with remote write 2.0 messages.
		send := m.Send && ptr.Deref(rw.MessageVersion, "") != monitoringv1.RemoteWriteMessageVersion2_0
		mc := yaml.MapSlice{{Key: "send", Value: send}}
		if m.SendInterval != "" {
			if _, err := model.ParseDuration(string(m.SendInterval)); err != nil {
				return nil, nil, fmt.Errorf("%s.metadataConfig.sendInterval: %w", path, err)
			}
			mc = append(mc, yaml.MapItem{Key: "send_interval", Value: string(m.SendInterval)})
		}
		if m.MaxSamplesPerSend != nil && r.AtLeast(2, 29) {
			mc = append(mc, yaml.MapItem{Key: "max_samples_per_send", Value: int64(*m.MaxSamplesPerSend)})
		}
		if r.AtLeast(2, 23) {
			queue = append(queue, yaml.MapItem{Key: "metadata_config", Value: mc})
		}
	}
	if rw.RoundRobinDNS != nil && r.AtLeast(3, 1) {
		queue = append(queue, yaml.MapItem{Key: "round_robin_dns", Value: *rw.RoundRobinDNS})
	}
	return tuning, queue, nil
}

// queueConfig renders the queue_config of q at path, each key for the
// Prometheus versions that have it, as prometheus-operator: min_shards
// from 2.6, max_retries before 2.11 (which later ones ignore),
// retry_on_http_429 from 2.26, sample_age_limit from 2.50.
func (r *Renderer) queueConfig(path string, q *monitoringv1.QueueConfig) (yaml.MapSlice, error) {
	qc := yaml.MapSlice{}
	for _, n := range []struct {
		key string
		v   int
		ok  bool
	}{
		{"capacity", q.Capacity, true}, {"min_shards", q.MinShards, r.AtLeast(2, 6)}, {"max_shards", q.MaxShards, true},
		{"max_samples_per_send", q.MaxSamplesPerSend, true}, {"max_retries", q.MaxRetries, !r.AtLeast(2, 11)},
	} {
		if n.v != 0 && n.ok {
			qc = append(qc, yaml.MapItem{Key: n.key, Value: int64(n.v)})
		}
	}
	for _, d := range []struct {
		key, field string
		v          *monitoringv1.Duration
	}{
		{"batch_send_deadline", "batchSendDeadline", q.BatchSendDeadline},
		{"min_backoff", "minBackoff", q.MinBackoff},
		{"max_backoff", "maxBackoff", q.MaxBackoff},
	} {
		if d.v == nil {
			continue
		}
		if _, err := model.ParseDuration(string(*d.v)); err != nil {
			return nil, fmt.Errorf("%s.%s: %w", path, d.field, err)
		}
		qc = append(qc, yaml.MapItem{Key: d.key, Value: string(*d.v)})
	}
	if q.RetryOnRateLimit && r.AtLeast(2, 26) {
		qc = append(qc, yaml.MapItem{Key: "retry_on_http_429", Value: true})
	}
	if q.SampleAgeLimit != nil {
		if _, err := model.ParseDuration(string(*q.SampleAgeLimit)); err != nil {
			return nil, fmt.Errorf("%s.sampleAgeLimit: %w", path, err)
		}
		if r.AtLeast(2, 50) {
			qc = append(qc, yaml.MapItem{Key: "sample_age_limit", Value: string(*q.SampleAgeLimit)})
		}
	}
	return qc, nil
}

// remoteWriteClient renders the HTTP client settings of the remote write
// endpoint rw at path after its basic auth and authorization, as
// prometheus-operator renders them: oauth2 (r.oauth2), tls_config, the
// proxy, sigv4 (from Prometheus 2.26), azuread, follow_redirects (from
// 2.26), enable_http2 (from 2.35).
func (r *Renderer) remoteWriteClient(path string, rw v1alpha1.RemoteWriteSpec) (yaml.MapSlice, error) {
	ns := r.Namespace
	var client yaml.MapSlice
	if rw.OAuth2 != nil {
		o, err := r.OAuth2(path+".oauth2", rw.OAuth2)
		if err != nil {
			return nil, err
		}
		client = append(client, o...)
	}
	if rw.TLSConfig != nil {
		tls, err := r.Cred.TLSConfig(ns, path+".tlsConfig", rw.TLSConfig)
		if err != nil {
			return nil, err
		}
		client = append(client, tls)
	}
	proxy, err := r.Cred.Proxy(ns, path, &rw.ProxyConfig)
	if err != nil {
		return nil, err
	}
	client = append(client, proxy...)
	if rw.Sigv4 != nil {
		sigv4, err := r.sigv4(path+".sigv4", rw.Sigv4)
		if err != nil {
			return nil, err
		}
		if r.AtLeast(2, 26) {
			client = append(client, sigv4)
		}
	}
	if rw.AzureAD != nil {
		azure, err := r.azureAD(path+".azureAd", rw.AzureAD)
		if err != nil {
			return nil, err
		}
		client = append(client, azure...)
	}
	if rw.FollowRedirects != nil && r.AtLeast(2, 26) {
		client = append(client, yaml.MapItem{Key: "follow_redirects", Value: *rw.FollowRedirects})
	}
	if rw.EnableHttp2 != nil && r.AtLeast(2, 35) {
		client = append(client, yaml.MapItem{Key: "enable_http2", Value: *rw.EnableHttp2})
	}
	return client, nil
}
