package promcfg

import (
	"fmt"
	"reflect"
	"strconv"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	yaml "go.yaml.in/yaml/v2"
)

// scrapeClass is a scrape class of spec.scrapeClasses, checked, with its
// relabelings rendered: what a ServiceMonitor, PodMonitor, Probe or
// ScrapeConfig takes from the class it names, or from the default one.
// The zero value is no class.
type scrapeClass struct {
	// tls holds files only (caFile, certFile, keyFile) and the settings
	// that name no Secret.
	tls *monitoringv1.TLSConfig
	// authorization has a credentialsFile.
	authorization          *monitoringv1.Authorization
	relabelings            []yaml.MapSlice
	metricRelabelings      []yaml.MapSlice
	attachMetadata         *monitoringv1.AttachMetadata
	fallbackScrapeProtocol *monitoringv1.ScrapeProtocol
}

// scrapeClasses checks spec.scrapeClasses and keeps them in r, as
// prometheus-operator does: unique names, one default at most, valid
// relabelings, TLS settings and authorization. An error refuses the
// server's spec.
func (r *renderer) scrapeClasses() error {
	classes := r.srv.Spec.ScrapeClasses
	r.classes = make(map[string]*scrapeClass, len(classes))
	for i := range classes {
		sc := &classes[i]
		path := "spec.scrapeClasses[" + strconv.Itoa(i) + "]"
		switch {
		case sc.Name == "":
			return fmt.Errorf("%s.name: must be set", path)
		case r.classes[sc.Name] != nil:
			return fmt.Errorf("%s.name: %q is used twice", path, sc.Name)
		}
		c, err := r.checkScrapeClass(path, sc)
		if err != nil {
			return err
		}
		if sc.Default != nil && *sc.Default {
			if r.defaultClass != "" {
				return fmt.Errorf("%s.default: scrape classes %q and %q are both the default, one at most may be", path, r.defaultClass, sc.Name)
			}
			r.defaultClass = sc.Name
		}
		r.classes[sc.Name] = c
	}
	return nil
}

// checkScrapeClass checks the scrape class sc at path and renders its
// relabelings.
func (r *renderer) checkScrapeClass(path string, sc *monitoringv1.ScrapeClass) (*scrapeClass, error) {
	c := &scrapeClass{tls: sc.TLSConfig, authorization: sc.Authorization, attachMetadata: sc.AttachMetadata}
	var err error
	if c.relabelings, err = r.relabelConfigs(nil, path+".relabelings", sc.Relabelings); err != nil {
		return nil, err
	}
	if c.metricRelabelings, err = r.relabelConfigs(nil, path+".metricRelabelings", sc.MetricRelabelings); err != nil {
		return nil, err
	}
	if p := sc.FallbackScrapeProtocol; p != nil {
		if !knownScrapeProtocol(*p) {
			return nil, fmt.Errorf("%s.fallbackScrapeProtocol: unknown protocol %q", path, *p)
		}
		c.fallbackScrapeProtocol = p
	}
	if err := r.checkClassTLS(path+".tlsConfig", sc.TLSConfig); err != nil {
		return nil, err
	}
	if err := r.checkClassAuthorization(path+".authorization", sc.Authorization); err != nil {
		return nil, err
	}
	return c, nil
}

// checkClassTLS checks the tlsConfig t of a scrape class at path: files
// only, as prometheus-operator supports, for the Secrets of an object's
// namespace are not the class's.
func (r *renderer) checkClassTLS(path string, t *monitoringv1.TLSConfig) error {
	if t == nil {
		return nil
	}
	for _, f := range []struct {
		field string
		set   bool
	}{
		{"ca", t.CA != (monitoringv1.SecretOrConfigMap{})},
		{"cert", t.Cert != (monitoringv1.SecretOrConfigMap{})},
		{"keySecret", t.KeySecret != nil},
	} {
		if f.set {
			return fmt.Errorf("%s.%s: a scrape class takes files only (caFile, certFile, keyFile)", path, f.field)
		}
	}
	_, err := r.cred.TLSConfig(r.srv.Namespace, path, t)
	return err
}

// checkClassAuthorization checks the authorization a of a scrape class at
// path: a credentialsFile, as for tlsConfig.
func (r *renderer) checkClassAuthorization(path string, a *monitoringv1.Authorization) error {
	switch {
	case a == nil:
		return nil
	case a.Credentials != nil:
		return fmt.Errorf("%s.credentials: a scrape class takes credentialsFile only", path)
	case a.CredentialsFile == "":
		return fmt.Errorf("%s.credentialsFile: must be set", path)
	}
	_, err := r.cred.Authorization(r.srv.Namespace, path, &a.SafeAuthorization, true)
	return err
}

// scrapeClass returns the scrape class an object names in its scrapeClass
// field (name), else the default one, else the zero class; an error for a
// name that is not a class of the server.
func (r *renderer) scrapeClass(name *string) (*scrapeClass, error) {
	if name != nil && *name != "" {
		c := r.classes[*name]
		if c == nil {
			return nil, fmt.Errorf("scrapeClass: %q: the PrometheusServer has no scrape class of that name", *name)
		}
		return c, nil
	}
	if c := r.classes[r.defaultClass]; c != nil {
		return c, nil
	}
	return &scrapeClass{}, nil
}

// mergeTLS returns the tlsConfig t of an object with its scrape class c
// merged in, as prometheus-operator merges them: c's when t is unset or
// empty; else t with c's caFile, certFile and keyFile where t has neither
// the file nor a Secret. t itself is left as it is.
func (c *scrapeClass) mergeTLS(t *monitoringv1.TLSConfig) *monitoringv1.TLSConfig {
	if c == nil || c.tls == nil {
		return t
	}
	if t == nil || reflect.ValueOf(*t).IsZero() {
		return c.tls
	}
	m := *t
	if m.CAFile == "" && m.CA == (monitoringv1.SecretOrConfigMap{}) {
		m.CAFile = c.tls.CAFile
	}
	if m.CertFile == "" && m.Cert == (monitoringv1.SecretOrConfigMap{}) {
		m.CertFile = c.tls.CertFile
	}
	if m.KeyFile == "" && m.KeySecret == nil {
		m.KeyFile = c.tls.KeyFile
	}
	return &m
}

// mergeAuthorization returns the authorization of endpoint e with its
// scrape class c merged in, as prometheus-operator merges them, and the
// credentials file to render with it: c's when e sets no way to
// authenticate (an empty authorization counts as none; prometheus-operator
// adds c's even beside basicAuth or oauth2, which Prometheus refuses), e's
// type with c's credentials file when e's authorization has no
// credentials; else e's own.
func (c *scrapeClass) mergeAuthorization(e *endpoint) (*monitoringv1.SafeAuthorization, string) {
	a := e.http.Authorization
	if c == nil || c.authorization == nil {
		return a, ""
	}
	h := e.http
	if a != nil && *a == (monitoringv1.SafeAuthorization{}) {
		h.Authorization = nil
	}
	switch {
	case !authSet(&h, e.bearerTokenFile):
		return &c.authorization.SafeAuthorization, c.authorization.CredentialsFile
	case a != nil && a.Credentials == nil:
		return a, c.authorization.CredentialsFile
	}
	return a, ""
}

// authSet tells whether h or bearerTokenFile sets a way to authenticate.
func authSet(h *monitoringv1.HTTPConfigWithoutTLS, bearerTokenFile string) bool {
	return h.Authorization != nil || h.BasicAuth != nil || h.OAuth2 != nil || h.BearerTokenSecret != nil || bearerTokenFile != ""
}
