package credential

import (
	"errors"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	yaml "go.yaml.in/yaml/v2"
)

// Sigv4 renders sigv4, AWS Signature Version 4, the access and secret
// keys read from their Secrets, as prometheus-operator's generator writes
// it: region, access_key and secret_key (when both values are not empty),
// profile, role_arn, external_id, use_fips_sts_endpoint. The keys a
// Prometheus version lacks are the caller's to drop.
func (r Reader) Sigv4(ns, path string, s *monitoringv1.Sigv4) (yaml.MapItem, error) {
	cfg := yaml.MapSlice{}
	if s.Region != "" {
		cfg = append(cfg, yaml.MapItem{Key: "region", Value: s.Region})
	}
	switch {
	case (s.AccessKey == nil) != (s.SecretKey == nil):
		return yaml.MapItem{}, AtPath(path, errors.New("accessKey and secretKey must be set together"))
	case s.AccessKey != nil:
		ak, err := r.Secret(ns, *s.AccessKey)
		if err != nil {
			return yaml.MapItem{}, AtPath(FieldPath(path, "accessKey"), err)
		}
		sk, err := r.Secret(ns, *s.SecretKey)
		if err != nil {
			return yaml.MapItem{}, AtPath(FieldPath(path, "secretKey"), err)
		}
		if ak != "" && sk != "" {
			cfg = append(cfg, yaml.MapItem{Key: "access_key", Value: ak}, yaml.MapItem{Key: "secret_key", Value: sk})
		}
	}
	if s.Profile != "" {
		cfg = append(cfg, yaml.MapItem{Key: "profile", Value: s.Profile})
	}
	if s.RoleArn != "" {
		cfg = append(cfg, yaml.MapItem{Key: "role_arn", Value: s.RoleArn})
	}
	if s.ExternalID != "" {
		cfg = append(cfg, yaml.MapItem{Key: "external_id", Value: s.ExternalID})
	}
	if s.UseFIPSSTSEndpoint != nil {
		cfg = append(cfg, yaml.MapItem{Key: "use_fips_sts_endpoint", Value: *s.UseFIPSSTSEndpoint})
	}
	return yaml.MapItem{Key: "sigv4", Value: cfg}, nil
}
