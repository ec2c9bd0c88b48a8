package promcfg

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	yaml "go.yaml.in/yaml/v2"

	"github.com/podreload/podreload/controller/promcfg/credential"
	"github.com/podreload/podreload/controller/promcfg/remote"
	"github.com/podreload/podreload/controller/promyaml"
)

// LogDirectory is where prometheus-operator mounts the emptyDir log-file
// for a query or scrape failure log file named without a directory, and
// where the configuration says it is.
const LogDirectory = "/var/log/prometheus"

// UsesLogVolume reports whether the log file file is named without a
// directory: it is then in LogDirectory, on the log-file volume.
func UsesLogVolume(file string) bool {
	return file != "" && filepath.Dir(file) == "."
}

// logFilePath is where the log file file is written.
func logFilePath(file string) string {
	if UsesLogVolume(file) {
		return filepath.Join(LogDirectory, file)
	}
	return file
}

// laterSections renders the sections that follow alerting, in
// prometheus-operator's order: remote_write, remote_read, otlp, tracing.
func (r *renderer) laterSections() (yaml.MapSlice, error) {
	var write yaml.MapSlice
	if rws := r.srv.Spec.RemoteWrite; len(rws) > 0 {
		out, err := r.remote().RemoteWrites(rws)
		if err != nil {
			return nil, err
		}
		write = yaml.MapSlice{{Key: "remote_write", Value: out}}
	}
	read, err := r.remoteReads()
	if err != nil {
		return nil, err
	}
	otlp, err := r.otlpSection()
	if err != nil {
		return nil, err
	}
	tracing, err := r.tracingSection()
	if err != nil {
		return nil, err
	}
	return slices.Concat(write, read, otlp, tracing), nil
}

// logFiles renders the global settings of the query log file (a
// Prometheus's, from 2.16) and the scrape failure log file (from 2.55),
// as prometheus-operator's generator.
func (r *renderer) logFiles() yaml.MapSlice {
	var out yaml.MapSlice
	if f := r.srv.Spec.ScrapeFailureLogFile; f != nil && r.version.AtLeast(2, 55) {
		out = append(out, yaml.MapItem{Key: "scrape_failure_log_file", Value: logFilePath(*f)})
	}
	if f := r.srv.Spec.QueryLogFile; f != "" && !r.agent && r.version.AtLeast(2, 16) {
		out = append(out, yaml.MapItem{Key: "query_log_file", Value: logFilePath(f)})
	}
	return out
}

// runtimeSection renders the runtime section (Prometheus 2.53 and later):
// gogc. None for a runtime without it, where prometheus-operator writes
// an empty list, which Prometheus refuses.
func (r *renderer) runtimeSection() yaml.MapSlice {
	rt := r.srv.Spec.Runtime
	if rt == nil || rt.GoGC == nil || !r.version.AtLeast(2, 53) {
		return nil
	}
	return yaml.MapSlice{{Key: "runtime", Value: yaml.MapSlice{{Key: "gogc", Value: int64(*rt.GoGC)}}}}
}

// otlpSection renders the otlp section, checked as prometheus-operator's
// generator checks it (appendOTLPConfig), each key for the Prometheus
// versions that have it.
func (r *renderer) otlpSection() (yaml.MapSlice, error) {
	o := r.srv.Spec.OTLP
	if o == nil {
		return nil, nil
	}
	strategy := monitoringv1.TranslationStrategyOption("")
	if o.TranslationStrategy != nil {
		strategy = *o.TranslationStrategy
	}
	scheme := r.srv.Spec.NameValidationScheme
	promoteAll := o.PromoteAllResourceAttributes != nil && *o.PromoteAllResourceAttributes
	switch {
	case !r.version.AtLeast(2, 55):
		return nil, errors.New("spec.otlp: requires Prometheus 2.55 or later")
	case strategy == monitoringv1.NoUTF8EscapingWithSuffixes && scheme != nil && *scheme == monitoringv1.LegacyNameValidationScheme:
		return nil, fmt.Errorf("spec.otlp.translationStrategy: %s requires a nameValidationScheme other than %s", strategy, *scheme)
	case strategy == monitoringv1.NoTranslation && !r.version.AtLeast(3, 4):
		return nil, fmt.Errorf("spec.otlp.translationStrategy: %s requires Prometheus 3.4 or later", strategy)
	case strategy == monitoringv1.UnderscoreEscapingWithoutSuffixes && !r.version.AtLeast(3, 6):
		return nil, fmt.Errorf("spec.otlp.translationStrategy: %s requires Prometheus 3.6 or later", strategy)
	case r.version.AtLeast(3, 5) && len(o.PromoteResourceAttributes) > 0 && promoteAll:
		return nil, errors.New("spec.otlp: promoteResourceAttributes and promoteAllResourceAttributes true are mutually exclusive")
	case r.version.AtLeast(3, 5) && len(o.IgnoreResourceAttributes) > 0 && !promoteAll:
		return nil, errors.New("spec.otlp.ignoreResourceAttributes: requires promoteAllResourceAttributes true")
	}
	var otlp yaml.MapSlice
	add := func(key string, set bool, v any, major, minor int) {
		if set && r.version.AtLeast(major, minor) {
			otlp = append(otlp, yaml.MapItem{Key: key, Value: v})
		}
	}
	boolOf := func(b *bool) any {
		if b == nil {
			return nil
		}
		return *b
	}
	add("promote_resource_attributes", len(o.PromoteResourceAttributes) > 0, o.PromoteResourceAttributes, 2, 55)
	add("translation_strategy", o.TranslationStrategy != nil, string(strategy), 3, 0)
	add("keep_identifying_resource_attributes", o.KeepIdentifyingResourceAttributes != nil, boolOf(o.KeepIdentifyingResourceAttributes), 3, 1)
	add("convert_histograms_to_nhcb", o.ConvertHistogramsToNHCB != nil, boolOf(o.ConvertHistogramsToNHCB), 3, 4)
	add("promote_all_resource_attributes", o.PromoteAllResourceAttributes != nil, boolOf(o.PromoteAllResourceAttributes), 3, 5)
	add("ignore_resource_attributes", len(o.IgnoreResourceAttributes) > 0, o.IgnoreResourceAttributes, 3, 5)
	add("promote_scope_metadata", o.PromoteScopeMetadata != nil, boolOf(o.PromoteScopeMetadata), 3, 6)
	add("label_name_underscore_sanitization", o.LabelNameUnderscoreSanitization != nil, boolOf(o.LabelNameUnderscoreSanitization), 3, 8)
	add("label_name_preserve_multiple_underscores", o.LabelNamePreserveMultipleUnderscores != nil, boolOf(o.LabelNamePreserveMultipleUnderscores), 3, 8)
	if len(otlp) == 0 {
		return nil, nil
	}
	return yaml.MapSlice{{Key: "otlp", Value: otlp}}, nil
}

// tracingSection renders the tracing section, as prometheus-operator's
// generator (appendTracingConfig), checked as Prometheus checks it.
func (r *renderer) tracingSection() (yaml.MapSlice, error) {
	t := r.srv.Spec.TracingConfig
	if t == nil {
		return nil, nil
	}
	const path = "spec.tracingConfig"
	if t.Endpoint == "" {
		return nil, errors.New(path + ".endpoint: must be set")
	}
	tracing := yaml.MapSlice{{Key: "endpoint", Value: t.Endpoint}}
	if t.ClientType != nil {
		c := strings.ToLower(*t.ClientType)
		if c != "grpc" && c != "http" {
			return nil, fmt.Errorf("%s.clientType: %q is not grpc or http", path, *t.ClientType)
		}
		tracing = append(tracing, yaml.MapItem{Key: "client_type", Value: c})
	}
	if f := t.SamplingFraction; f != nil {
		v := f.AsApproximateFloat64()
		if v < 0 || v > 1 {
			return nil, fmt.Errorf("%s.samplingFraction: %s is not between 0 and 1", path, f.String())
		}
		tracing = append(tracing, yaml.MapItem{Key: "sampling_fraction", Value: v})
	}
	if t.Insecure != nil {
		tracing = append(tracing, yaml.MapItem{Key: "insecure", Value: *t.Insecure})
	}
	if len(t.Headers) > 0 {
		tracing = append(tracing, yaml.MapItem{Key: "headers", Value: promyaml.SortedMap(t.Headers)})
	}
	if t.Compression != nil {
		c := strings.ToLower(*t.Compression)
		if c != "gzip" {
			return nil, fmt.Errorf("%s.compression: %q is not gzip", path, *t.Compression)
		}
		tracing = append(tracing, yaml.MapItem{Key: "compression", Value: c})
	}
	if t.Timeout != nil {
		if _, err := remote.PositiveDuration(string(*t.Timeout)); err != nil {
			return nil, fmt.Errorf("%s.timeout: %w", path, err)
		}
		tracing = append(tracing, yaml.MapItem{Key: "timeout", Value: string(*t.Timeout)})
	}
	if t.TLSConfig != nil {
		tls, err := r.cred.TLSConfig(r.srv.Namespace, path+".tlsConfig", t.TLSConfig)
		if err != nil {
			return nil, err
		}
		tracing = append(tracing, tls)
	}
	return yaml.MapSlice{{Key: "tracing", Value: tracing}}, nil
}

// apiServerSD renders the settings spec.apiserverConfig adds to every
// Kubernetes service discovery of the monitors, Probes and Alertmanagers,
// as prometheus-operator's generator (generateK8SSDConfig): api_server,
// basic_auth, bearer_token, bearer_token_file, authorization
// (r.authorization), tls_config, the proxy. None without one.
func (r *renderer) apiServerSD() (yaml.MapSlice, error) {
	a := r.srv.Spec.APIServerConfig
	if a == nil {
		return nil, nil
	}
	const path = "spec.apiserverConfig"
	ns := r.srv.Namespace
	u, err := credential.ParseURL(a.Host)
	if err != nil {
		return nil, fmt.Errorf("%s.host: %w", path, err)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%s.host: %q is not a URL with a host", path, credential.ShownURL(u))
	}
	if err := remote.ExclusiveAuth(path, []string{"basicAuth", "authorization", "bearerToken", "bearerTokenFile"},
		a.BasicAuth != nil, a.Authorization != nil, a.BearerToken != "", a.BearerTokenFile != ""); err != nil {
		return nil, err
	}
	sd := yaml.MapSlice{{Key: "api_server", Value: a.Host}}
	if a.BasicAuth != nil {
		ba, err := r.cred.BasicAuth(ns, path+".basicAuth", a.BasicAuth)
		if err != nil {
			return nil, err
		}
		sd = append(sd, ba)
	}
	sd = append(sd, remote.BearerToken(a.BearerToken, a.BearerTokenFile)...)
	if a.Authorization != nil {
		auth, err := r.remote().Authorization(path+".authorization", a.Authorization)
		if err != nil {
			return nil, err
		}
		sd = append(sd, auth)
	}
	if a.TLSConfig != nil {
		tls, err := r.cred.TLSConfig(ns, path+".tlsConfig", a.TLSConfig)
		if err != nil {
			return nil, err
		}
		sd = append(sd, tls)
	}
	proxy, err := r.cred.Proxy(ns, path, &a.ProxyConfig)
	if err != nil {
		return nil, err
	}
	return append(sd, proxy...), nil
}

// remoteReads renders the remote_read section of a Prometheus's
// spec.remoteRead, as prometheus-operator's generator
// (generateRemoteReadConfig), each key for the Prometheus versions that
// have it.
func (r *renderer) remoteReads() (yaml.MapSlice, error) {
	rrs := r.srv.Spec.RemoteRead
	if len(rrs) == 0 || r.agent {
		return nil, nil
	}
	out := make([]yaml.MapSlice, 0, len(rrs))
	names := map[string]bool{}
	for i, rr := range rrs {
		path := fmt.Sprintf("spec.remoteRead[%d]", i)
		u, err := credential.ParseURL(string(rr.URL))
		if err != nil {
			return nil, fmt.Errorf("%s.url: %w", path, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("%s.url: %q is not an http or https URL", path, credential.ShownURL(u))
		}
		cfg := yaml.MapSlice{{Key: "url", Value: string(rr.URL)}}
		if rr.RemoteTimeout != nil {
			if _, err := model.ParseDuration(string(*rr.RemoteTimeout)); err != nil {
				return nil, fmt.Errorf("%s.remoteTimeout: %w", path, err)
			}
			cfg = append(cfg, yaml.MapItem{Key: "remote_timeout", Value: string(*rr.RemoteTimeout)})
		}
		if len(rr.Headers) > 0 && r.version.AtLeast(2, 26) {
			cfg = append(cfg, yaml.MapItem{Key: "headers", Value: promyaml.SortedMap(rr.Headers)})
		}
		if rr.Name != "" {
			if names[rr.Name] {
				return nil, fmt.Errorf("%s.name: %q is used twice", path, rr.Name)
			}
			names[rr.Name] = true
			if r.version.AtLeast(2, 15) {
				cfg = append(cfg, yaml.MapItem{Key: "name", Value: rr.Name})
			}
		}
		if len(rr.RequiredMatchers) > 0 {
			cfg = append(cfg, yaml.MapItem{Key: "required_matchers", Value: promyaml.SortedMap(rr.RequiredMatchers)})
		}
		if rr.ReadRecent {
			cfg = append(cfg, yaml.MapItem{Key: "read_recent", Value: true})
		}
		client, err := r.remoteReadClient(path, &rr)
		if err != nil {
			return nil, err
		}
		out = append(out, append(cfg, client...))
	}
	return yaml.MapSlice{{Key: "remote_read", Value: out}}, nil
}

// remoteReadClient renders the HTTP client settings of the remote read
// rr at path: basic_auth, bearer_token, bearer_token_file, oauth2
// (r.oauth2), tls_config, authorization (r.authorization), the proxy,
// follow_redirects (from 2.26), filter_external_labels (from 2.34).
func (r *renderer) remoteReadClient(path string, rr *monitoringv1.RemoteReadSpec) (yaml.MapSlice, error) {
	ns := r.srv.Namespace
	if err := remote.ExclusiveAuth(path, []string{"basicAuth", "oauth2", "authorization", "bearerToken", "bearerTokenFile"},
		rr.BasicAuth != nil, rr.OAuth2 != nil, rr.Authorization != nil, rr.BearerToken != "", rr.BearerTokenFile != ""); err != nil {
		return nil, err
	}
	var cfg yaml.MapSlice
	if rr.BasicAuth != nil {
		ba, err := r.cred.BasicAuth(ns, path+".basicAuth", rr.BasicAuth)
		if err != nil {
			return nil, err
		}
		cfg = append(cfg, ba)
	}
	cfg = append(cfg, remote.BearerToken(rr.BearerToken, rr.BearerTokenFile)...)
	if rr.OAuth2 != nil {
		o, err := r.remote().OAuth2(path+".oauth2", rr.OAuth2)
		if err != nil {
			return nil, err
		}
		cfg = append(cfg, o...)
	}
	if rr.TLSConfig != nil {
		tls, err := r.cred.TLSConfig(ns, path+".tlsConfig", rr.TLSConfig)
		if err != nil {
			return nil, err
		}
		cfg = append(cfg, tls)
	}
	if rr.Authorization != nil {
		auth, err := r.remote().Authorization(path+".authorization", rr.Authorization)
		if err != nil {
			return nil, err
		}
		cfg = append(cfg, auth)
	}
	proxy, err := r.cred.Proxy(ns, path, &rr.ProxyConfig)
	if err != nil {
		return nil, err
	}
	cfg = append(cfg, proxy...)
	if rr.FollowRedirects != nil && r.version.AtLeast(2, 26) {
		cfg = append(cfg, yaml.MapItem{Key: "follow_redirects", Value: *rr.FollowRedirects})
	}
	if rr.FilterExternalLabels != nil && r.version.AtLeast(2, 34) {
		cfg = append(cfg, yaml.MapItem{Key: "filter_external_labels", Value: *rr.FilterExternalLabels})
	}
	return cfg, nil
}
