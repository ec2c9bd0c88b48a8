package remote

import (
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	yaml "go.yaml.in/yaml/v2"
	"k8s.io/utils/ptr"
)

// sigv4 renders the sigv4 s at path (credential.Reader.Sigv4) with the
// keys the server's Prometheus version has, as prometheus-operator's
// generator: external_id from 3.11, use_fips_sts_endpoint from 2.54.
func (r *Renderer) sigv4(path string, s *monitoringv1.Sigv4) (yaml.MapItem, error) {
	item, err := r.Cred.Sigv4(r.Namespace, path, s)
	if err != nil {
		return yaml.MapItem{}, err
	}
	item.Value = slices.DeleteFunc(item.Value.(yaml.MapSlice), func(k yaml.MapItem) bool {
		return k.Key == "external_id" && !r.AtLeast(3, 11) ||
			k.Key == "use_fips_sts_endpoint" && !r.AtLeast(2, 54)
	})
	return item, nil
}

// OAuth2 renders the oauth2 o at path of a remote write or a remote read
// (credential.Reader.OAuth2) for the Prometheus versions that have it, as
// prometheus-operator's generator: from 2.27, its proxy and TLS settings
// from 2.43; none before.
func (r *Renderer) OAuth2(path string, o *monitoringv1.OAuth2) (yaml.MapSlice, error) {
	item, err := r.Cred.OAuth2(r.Namespace, path, o)
	if err != nil {
		return nil, err
	}
	if !r.AtLeast(2, 27) {
		return nil, nil
	}
	if !r.AtLeast(2, 43) {
		item.Value = slices.DeleteFunc(item.Value.(yaml.MapSlice), func(k yaml.MapItem) bool {
			switch k.Key {
			case "proxy_url", "no_proxy", "proxy_from_environment", "proxy_connect_header", "tls_config":
				return true
			}
			return false
		})
	}
	return yaml.MapSlice{item}, nil
}

// protobufMessage renders the protobuf_message of a remote write's
// messageVersion v at path (from Prometheus 2.54); none when v is nil.
func (r *Renderer) protobufMessage(path string, v *monitoringv1.RemoteWriteMessageVersion) (yaml.MapSlice, error) {
	if v == nil {
		return nil, nil
	}
	message, ok := map[monitoringv1.RemoteWriteMessageVersion]string{
		monitoringv1.RemoteWriteMessageVersion1_0: "prometheus.WriteRequest",
		monitoringv1.RemoteWriteMessageVersion2_0: "io.prometheus.write.v2.Request",
	}[*v]
	if !ok {
		return nil, fmt.Errorf("%s.messageVersion: %q is not V1.0 or V2.0", path, *v)
	}
	if !r.AtLeast(2, 54) {
		return nil, nil
	}
	return yaml.MapSlice{{Key: "protobuf_message", Value: message}}, nil
}

// azureAD renders the azuread section of the Azure AD settings a at path,
// the OAuth client secret read from its Secret, after checking them as
// prometheus-operator does (validateRemoteWriteSpec): exactly one way to
// authenticate, those the server's Prometheus version has (oauth from
// 2.48, sdk from 2.52, workloadIdentity from 3.7, a managedIdentity
// without clientId from 3.5), UUIDs where Azure wants them. The section
// is rendered from Prometheus 2.45, scope from 3.9.
func (r *Renderer) azureAD(path string, a *monitoringv1.AzureAD) (yaml.MapSlice, error) {
	if err := r.checkAzureAD(a); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cfg := yaml.MapSlice{}
	if m := a.ManagedIdentity; m != nil {
		identity := yaml.MapSlice{}
		if id := ptr.Deref(m.ClientID, ""); id != "" {
			identity = append(identity, yaml.MapItem{Key: "client_id", Value: id})
		}
		cfg = append(cfg, yaml.MapItem{Key: "managed_identity", Value: identity})
	}
	if o := a.OAuth; o != nil {
		secret, err := r.Cred.Secret(r.Namespace, o.ClientSecret)
		if err != nil {
			return nil, fmt.Errorf("%s.oauth.clientSecret: %w", path, err)
		}
		cfg = append(cfg, yaml.MapItem{Key: "oauth", Value: yaml.MapSlice{
			{Key: "client_id", Value: o.ClientID},
			{Key: "client_secret", Value: secret},
			{Key: "tenant_id", Value: o.TenantID},
		}})
	}
	if s := a.SDK; s != nil {
		cfg = append(cfg, yaml.MapItem{Key: "sdk", Value: yaml.MapSlice{{Key: "tenant_id", Value: ptr.Deref(s.TenantID, "")}}})
	}
	if w := a.WorkloadIdentity; w != nil {
		cfg = append(cfg, yaml.MapItem{Key: "workload_identity", Value: yaml.MapSlice{
			{Key: "client_id", Value: w.ClientID},
			{Key: "tenant_id", Value: w.TenantID},
		}})
	}
	if a.Cloud != nil {
		cfg = append(cfg, yaml.MapItem{Key: "cloud", Value: *a.Cloud})
	}
	if scope := ptr.Deref(a.Scope, ""); scope != "" && r.AtLeast(3, 9) {
		cfg = append(cfg, yaml.MapItem{Key: "scope", Value: scope})
	}
	if !r.AtLeast(2, 45) {
		return nil, nil
	}
	return yaml.MapSlice{{Key: "azuread", Value: cfg}}, nil
}

// checkAzureAD checks the Azure AD settings a as prometheus-operator
// does.
func (r *Renderer) checkAzureAD(a *monitoringv1.AzureAD) error {
	var set []string
	for _, m := range []struct {
		name string
		set  bool
	}{
		{"managedIdentity", a.ManagedIdentity != nil}, {"oauth", a.OAuth != nil},
		{"sdk", a.SDK != nil}, {"workloadIdentity", a.WorkloadIdentity != nil},
	} {
		if m.set {
			set = append(set, m.name)
		}
	}
	switch {
	case len(set) == 0:
		return errors.New("one of managedIdentity, oauth, sdk and workloadIdentity must be set")
	case len(set) > 1:
		return fmt.Errorf("%s and %s are mutually exclusive", set[0], set[1])
	}
	switch {
	case a.ManagedIdentity != nil && ptr.Deref(a.ManagedIdentity.ClientID, "") == "" && !r.AtLeast(3, 5):
		return errors.New("managedIdentity.clientId: must be set before Prometheus 3.5")
	case a.OAuth != nil && !r.AtLeast(2, 48):
		return errors.New("oauth: requires Prometheus 2.48 or later")
	case a.OAuth != nil && uuid.Validate(a.OAuth.ClientID) != nil:
		return fmt.Errorf("oauth.clientId: %q is not a UUID", a.OAuth.ClientID)
	case a.SDK != nil && !r.AtLeast(2, 52):
		return errors.New("sdk: requires Prometheus 2.52 or later")
	case a.WorkloadIdentity != nil && !r.AtLeast(3, 7):
		return errors.New("workloadIdentity: requires Prometheus 3.7 or later")
	case a.WorkloadIdentity != nil && uuid.Validate(a.WorkloadIdentity.ClientID) != nil:
		return fmt.Errorf("workloadIdentity.clientId: %q is not a UUID", a.WorkloadIdentity.ClientID)
	case a.WorkloadIdentity != nil && uuid.Validate(a.WorkloadIdentity.TenantID) != nil:
		return fmt.Errorf("workloadIdentity.tenantId: %q is not a UUID", a.WorkloadIdentity.TenantID)
	}
	return nil
}
