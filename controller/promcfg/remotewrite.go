package promcfg

import (
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	yaml "go.yaml.in/yaml/v2"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promyaml"
)

// remoteWriteTuning renders the settings of the remote write endpoint rw
// at path beyond its URL, name and credentials, as prometheus-operator
// renders them: tuning goes after the name (headers, send_exemplars,
// send_native_histograms, write_relabel_configs), queue after the
// credentials (queue_config, metadata_config).
func (r *renderer) remoteWriteTuning(path string, rw v1alpha1.RemoteWriteSpec) (tuning, queue yaml.MapSlice, err error) {
	if len(rw.Headers) > 0 {
		tuning = append(tuning, yaml.MapItem{Key: "headers", Value: promyaml.SortedMap(rw.Headers)})
	}
	if rw.SendExemplars != nil {
		tuning = append(tuning, yaml.MapItem{Key: "send_exemplars", Value: *rw.SendExemplars})
	}
	if rw.SendNativeHistograms != nil {
		tuning = append(tuning, yaml.MapItem{Key: "send_native_histograms", Value: *rw.SendNativeHistograms})
	}
	var relabelings []yaml.MapSlice
	for i := range rw.WriteRelabelConfigs {
		rc, err := r.relabel.Rule(fmt.Sprintf("%s.writeRelabelConfigs[%d]", path, i), &rw.WriteRelabelConfigs[i])
		if err != nil {
			return nil, nil, err
		}
		relabelings = append(relabelings, rc)
	}
	if len(relabelings) > 0 {
		tuning = append(tuning, yaml.MapItem{Key: "write_relabel_configs", Value: relabelings})
	}

	if q := rw.QueueConfig; q != nil {
		qc, err := queueConfig(path+".queueConfig", q)
		if err != nil {
			return nil, nil, err
		}
		queue = append(queue, yaml.MapItem{Key: "queue_config", Value: qc})
	}
	if m := rw.MetadataConfig; m != nil {
		mc := yaml.MapSlice{{Key: "send", Value: m.Send}}
		if m.SendInterval != "" {
			if _, err := model.ParseDuration(string(m.SendInterval)); err != nil {
				return nil, nil, fmt.Errorf("%s.metadataConfig.sendInterval: %w", path, err)
			}
			mc = append(mc, yaml.MapItem{Key: "send_interval", Value: string(m.SendInterval)})
		}
		if m.MaxSamplesPerSend != nil {
			mc = append(mc, yaml.MapItem{Key: "max_samples_per_send", Value: int64(*m.MaxSamplesPerSend)})
		}
		queue = append(queue, yaml.MapItem{Key: "metadata_config", Value: mc})
	}
	return tuning, queue, nil
}

// queueConfig renders the queue_config of q at path; maxRetries, which
// Prometheus 2.11 and later ignore, is left out, as prometheus-operator
// does for them.
func queueConfig(path string, q *monitoringv1.QueueConfig) (yaml.MapSlice, error) {
	qc := yaml.MapSlice{}
	for _, n := range []struct {
		key string
		v   int
	}{
		{"capacity", q.Capacity}, {"min_shards", q.MinShards}, {"max_shards", q.MaxShards}, {"max_samples_per_send", q.MaxSamplesPerSend},
	} {
		if n.v != 0 {
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
	if q.RetryOnRateLimit {
		qc = append(qc, yaml.MapItem{Key: "retry_on_http_429", Value: true})
	}
	if q.SampleAgeLimit != nil {
		if _, err := model.ParseDuration(string(*q.SampleAgeLimit)); err != nil {
			return nil, fmt.Errorf("%s.sampleAgeLimit: %w", path, err)
		}
		qc = append(qc, yaml.MapItem{Key: "sample_age_limit", Value: string(*q.SampleAgeLimit)})
	}
	return qc, nil
}

// remoteWriteClient renders the HTTP client settings of the remote write
// endpoint rw at path after its basic auth and authorization, as
// prometheus-operator renders them: oauth2, tls_config, the proxy,
// follow_redirects, enable_http2.
func (r *renderer) remoteWriteClient(path string, rw v1alpha1.RemoteWriteSpec) (yaml.MapSlice, error) {
	ns := r.srv.Namespace
	var client yaml.MapSlice
	if rw.OAuth2 != nil {
		o, err := r.cred.OAuth2(ns, path+".oauth2", rw.OAuth2)
		if err != nil {
			return nil, err
		}
		client = append(client, o)
	}
	if rw.TLSConfig != nil {
		tls, err := r.cred.TLSConfig(ns, path+".tlsConfig", rw.TLSConfig)
		if err != nil {
			return nil, err
		}
		client = append(client, tls)
	}
	proxy, err := r.cred.Proxy(ns, path, &rw.ProxyConfig)
	if err != nil {
		return nil, err
	}
	client = append(client, proxy...)
	if rw.FollowRedirects != nil {
		client = append(client, yaml.MapItem{Key: "follow_redirects", Value: *rw.FollowRedirects})
	}
	if rw.EnableHttp2 != nil {
		client = append(client, yaml.MapItem{Key: "enable_http2", Value: *rw.EnableHttp2})
	}
	return client, nil
}
