package promcfg

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/alecthomas/units"
	"github.com/podreload/podreload/controller/promcfg/credential"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	yaml "go.yaml.in/yaml/v2"
	"k8s.io/utils/ptr"
)

// scrapeIntervals renders the scrape_interval and scrape_timeout of a job
// from interval and timeout, the fields at intervalPath and timeoutPath,
// with Prometheus' rule: the timeout is not longer than the interval, the
// global one when there is none.
func (r *renderer) scrapeIntervals(intervalPath, timeoutPath string, interval, timeout monitoringv1.Duration) (yaml.MapSlice, error) {
	var items yaml.MapSlice
	d, text, name := r.interval, r.intervalText, "the global scrape interval"
	if interval != "" {
		v, err := model.ParseDuration(string(interval))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", intervalPath, err)
		}
		// Prometheus reads a zero interval as the global one.
		if v != 0 {
			d, text, name = v, string(interval), "the scrape interval"
		}
		items = append(items, yaml.MapItem{Key: "scrape_interval", Value: string(interval)})
	}
	if timeout != "" {
		v, err := model.ParseDuration(string(timeout))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", timeoutPath, err)
		}
		if v > d {
			return nil, fmt.Errorf("%s: %q is greater than %s %q", timeoutPath, timeout, name, text)
		}
		items = append(items, yaml.MapItem{Key: "scrape_timeout", Value: string(timeout)})
	}
	return items, nil
}

// schemeItem renders the scheme s of the field at path: none when it is
// not set.
func schemeItem(path string, s *monitoringv1.Scheme) (yaml.MapSlice, error) {
	if s == nil || *s == "" {
		return nil, nil
	}
	scheme := strings.ToLower(string(*s))
	if scheme != "http" && scheme != "https" {
		return nil, fmt.Errorf("%s: %q is not http or https", path, *s)
	}
	return yaml.MapSlice{{Key: "scheme", Value: scheme}}, nil
}

// relabelConfigs appends the rendered rcs to dst; field names them in errors.
func (r *renderer) relabelConfigs(dst []yaml.MapSlice, field string, rcs []monitoringv1.RelabelConfig) ([]yaml.MapSlice, error) {
	for i := range rcs {
		rc, err := r.relabel.Rule(field+"["+strconv.Itoa(i)+"]", &rcs[i])
		if err != nil {
			return nil, err
		}
		dst = append(dst, rc)
	}
	return dst, nil
}

// monitorTail checks and renders the limits, protocols and histogram
// settings a monitor's jobs end with, for the server's Prometheus: the
// limits its version has, capped by the server's enforced limits, as
// prometheus-operator (AddLimitsToYAML, getLimit).
func (r *renderer) monitorTail(s *monitorSpec) (yaml.MapSlice, error) {
	var tail yaml.MapSlice
	spec := &r.srv.Spec
	for _, l := range []struct {
		field, key   string
		v, enforced  *int64
		major, minor int
	}{
		{"sampleLimit", "sample_limit", s.sampleLimit, spec.EnforcedSampleLimit, 0, 0},
		{"targetLimit", "target_limit", s.targetLimit, spec.EnforcedTargetLimit, 2, 21},
		{"labelLimit", "label_limit", s.labelLimit, spec.EnforcedLabelLimit, 2, 27},
		{"labelNameLengthLimit", "label_name_length_limit", s.labelNameLengthLimit, spec.EnforcedLabelNameLengthLimit, 2, 27},
		{"labelValueLengthLimit", "label_value_length_limit", s.labelValueLengthLimit, spec.EnforcedLabelValueLengthLimit, 2, 27},
		{"keepDroppedTargets", "keep_dropped_targets", s.keepDroppedTargets, spec.EnforcedKeepDroppedTargets, 2, 47},
	} {
		if l.v != nil && *l.v < 0 {
			return nil, fmt.Errorf("%s: %d is negative", l.field, *l.v)
		}
		if v := r.enforcedLimit(l.v, l.enforced); v != nil && r.version.AtLeast(l.major, l.minor) {
			tail = append(tail, yaml.MapItem{Key: l.key, Value: *v})
		}
	}
	if len(s.scrapeProtocols) > 0 {
		ps := make([]string, len(s.scrapeProtocols))
		for i, p := range s.scrapeProtocols {
			if !knownScrapeProtocol(p) {
				return nil, fmt.Errorf("scrapeProtocols[%d]: unknown protocol %q", i, p)
			}
			ps[i] = string(p)
		}
		tail = append(tail, yaml.MapItem{Key: "scrape_protocols", Value: ps})
	}
	if p := s.fallbackScrapeProtocol; p != nil {
		if !knownScrapeProtocol(*p) {
			return nil, fmt.Errorf("fallbackScrapeProtocol: unknown protocol %q", *p)
		}
		tail = append(tail, yaml.MapItem{Key: "fallback_scrape_protocol", Value: string(*p)})
	}
	nh := &s.nativeHistograms
	if nh.ScrapeNativeHistograms != nil {
		tail = append(tail, yaml.MapItem{Key: "scrape_native_histograms", Value: *nh.ScrapeNativeHistograms})
	}
	if nh.ScrapeClassicHistograms != nil {
		tail = append(tail, yaml.MapItem{Key: "always_scrape_classic_histograms", Value: *nh.ScrapeClassicHistograms})
	}
	if nh.NativeHistogramBucketLimit != nil {
		if *nh.NativeHistogramBucketLimit < 0 {
			return nil, fmt.Errorf("nativeHistogramBucketLimit: %d is negative", *nh.NativeHistogramBucketLimit)
		}
		tail = append(tail, yaml.MapItem{Key: "native_histogram_bucket_limit", Value: *nh.NativeHistogramBucketLimit})
	}
	if nh.NativeHistogramMinBucketFactor != nil {
		tail = append(tail, yaml.MapItem{Key: "native_histogram_min_bucket_factor", Value: nh.NativeHistogramMinBucketFactor.AsApproximateFloat64()})
	}
	if nh.ConvertClassicHistogramsToNHCB != nil {
		tail = append(tail, yaml.MapItem{Key: "convert_classic_histograms_to_nhcb", Value: *nh.ConvertClassicHistogramsToNHCB})
	}
	b, err := r.enforcedBodySize(s.bodySizeLimit)
	if err != nil {
		return nil, err
	}
	if b != "" && r.version.AtLeast(2, 28) {
		tail = append(tail, yaml.MapItem{Key: "body_size_limit", Value: b})
	}
	return tail, nil
}

// enforcedLimit is the limit of a job whose object says v (nil: none),
// capped by the server's enforced limit (nil or 0: none): the lower of
// the two; enforced when v is unset or 0, but for Prometheus 2.45 and
// later, whose global limit (capped too) applies (nil).
func (r *renderer) enforcedLimit(v, enforced *int64) *int64 {
	switch e, own := ptr.Deref(enforced, 0), ptr.Deref(v, 0); {
	case e == 0:
		return v
	case own == 0 && r.version.AtLeast(2, 45):
		return nil
	case own == 0 || own > e:
		return enforced
	}
	return v
}

// enforcedBodySize is the body_size_limit of a job whose object says b
// (nil or "": none), capped by the server's enforcedBodySizeLimit: the
// smaller of the two, enforced when b is unset.
func (r *renderer) enforcedBodySize(b *monitoringv1.ByteSize) (string, error) {
	own := string(ptr.Deref(b, ""))
	var ownBytes units.Base2Bytes
	if own != "" {
		var err error
		if ownBytes, err = units.ParseBase2Bytes(own); err != nil {
			return "", fmt.Errorf("bodySizeLimit: %q is not a size such as 512MB", own)
		}
	}
	enforced := string(r.srv.Spec.EnforcedBodySizeLimit)
	if enforced == "" {
		return own, nil
	}
	e, err := units.ParseBase2Bytes(enforced)
	if err != nil {
		return "", fmt.Errorf("spec.enforcedBodySizeLimit: %q is not a size such as 512MB", enforced)
	}
	if own == "" || ownBytes > e {
		return enforced, nil
	}
	return own, nil
}

// endpointAuth renders the credentials and TLS settings of endpoint e,
// at path ("" for a spec's own fields), with those of its scrape class
// merged in.
func (r *renderer) endpointAuth(ns, path string, e *endpoint) (yaml.MapSlice, error) {
	var items yaml.MapSlice
	if err := credential.CheckAuthMethods(&e.http, e.bearerTokenFile); err != nil {
		return nil, credential.AtPath(path, err)
	}
	if o := e.http.OAuth2; o != nil {
		item, err := r.cred.OAuth2(ns, credential.FieldPath(path, "oauth2"), o)
		if err != nil {
			return nil, err
		}
		items = append(items, item)
	}
	if tls := e.class.mergeTLS(e.tls); tls != nil {
		item, err := r.cred.TLSConfig(ns, credential.FieldPath(path, "tlsConfig"), tls)
		if err != nil {
			return nil, err
		}
		items = append(items, item)
	}
	if e.bearerTokenFile != "" {
		items = append(items, yaml.MapItem{Key: "bearer_token_file", Value: e.bearerTokenFile})
	}
	if sel := e.http.BearerTokenSecret; sel != nil {
		v, err := r.cred.Secret(ns, *sel)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", credential.FieldPath(path, "bearerTokenSecret"), err)
		}
		items = append(items, yaml.MapItem{Key: "bearer_token", Value: v})
	}
	if ba := e.http.BasicAuth; ba != nil {
		item, err := r.cred.BasicAuth(ns, credential.FieldPath(path, "basicAuth"), ba)
		if err != nil {
			return nil, err
		}
		items = append(items, item)
	}
	if a, file := e.class.mergeAuthorization(e); a != nil {
		item, err := r.cred.Authorization(ns, credential.FieldPath(path, "authorization"), a, file != "")
		if err != nil {
			return nil, err
		}
		if file != "" {
			item.Value = append(item.Value.(yaml.MapSlice), yaml.MapItem{Key: "credentials_file", Value: file})
		}
		items = append(items, item)
	}
	return items, nil
}

func knownScrapeProtocol(p monitoringv1.ScrapeProtocol) bool {
	switch p {
	case monitoringv1.PrometheusProto, monitoringv1.PrometheusText0_0_4, monitoringv1.PrometheusText1_0_0,
		monitoringv1.OpenMetricsText0_0_1, monitoringv1.OpenMetricsText1_0_0:
		return true
	}
	return false
}
