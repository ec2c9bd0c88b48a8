package promcfg

import (
	"fmt"
	"slices"

	yaml "go.yaml.in/yaml/v2"

	"github.com/podreload/podreload/api/v1alpha1"
)

// alertmanagerClient renders the HTTP client settings of the Alertmanager
// endpoint am at path, as prometheus-operator renders them, with the
// Secrets of the server's namespace: client goes before the service
// discovery (timeout, enable_http2, tls_config, the proxy), auth after it
// (bearer_token_file, basic_auth, authorization).
func (r *renderer) alertmanagerClient(path string, am *v1alpha1.AlertmanagerEndpoint) (client, auth yaml.MapSlice, err error) {
	ns := r.srv.Namespace
	if am.Timeout != nil {
		if _, err := positiveDuration(string(*am.Timeout)); err != nil {
			return nil, nil, fmt.Errorf("%s.timeout: %w", path, err)
		}
		client = append(client, yaml.MapItem{Key: "timeout", Value: string(*am.Timeout)})
	}
	if am.EnableHttp2 != nil {
		client = append(client, yaml.MapItem{Key: "enable_http2", Value: *am.EnableHttp2})
	}
	if am.TLSConfig != nil {
		tls, err := r.cred.TLSConfig(ns, path+".tlsConfig", am.TLSConfig)
		if err != nil {
			return nil, nil, err
		}
		client = append(client, tls)
	}
	proxy, err := r.cred.Proxy(ns, path, &am.ProxyConfig)
	if err != nil {
		return nil, nil, err
	}
	client = append(client, proxy...)

	if len(slices.DeleteFunc([]bool{am.BasicAuth != nil, am.Authorization != nil, am.BearerTokenFile != ""}, func(set bool) bool { return !set })) > 1 {
		return nil, nil, fmt.Errorf("%s: basicAuth, authorization and bearerTokenFile are mutually exclusive", path)
	}
	if am.BearerTokenFile != "" {
		auth = append(auth, yaml.MapItem{Key: "bearer_token_file", Value: am.BearerTokenFile})
	}
	if am.BasicAuth != nil {
		ba, err := r.cred.BasicAuth(ns, path+".basicAuth", am.BasicAuth)
		if err != nil {
			return nil, nil, err
		}
		auth = append(auth, ba)
	}
	if am.Authorization != nil {
		a, err := r.cred.Authorization(ns, path+".authorization", am.Authorization, false)
		if err != nil {
			return nil, nil, err
		}
		auth = append(auth, a)
	}
	return client, auth, nil
}
