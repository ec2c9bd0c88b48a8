package v1alpha1

import monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

// RemoteWriteSpec is a remote write endpoint.
type RemoteWriteSpec struct {
	// URL of the endpoint.
	// +kubebuilder:validation:Pattern=`^https?://`
	URL string `json:"url"`
	// Name of the queue, unique among the endpoints.
	// +optional
	Name string `json:"name,omitempty"`
	// BasicAuth for the endpoint, from Secrets in the PrometheusServer's namespace.
	// +optional
	BasicAuth *monitoringv1.BasicAuth `json:"basicAuth,omitempty"`
	// Authorization header for the endpoint, from a Secret in the
	// PrometheusServer's namespace.
	// +optional
	Authorization *monitoringv1.Authorization `json:"authorization,omitempty"`
	// OAuth2 credentials for the endpoint, from Secrets and ConfigMaps of
	// the server's namespace; at most one of basicAuth, oauth2 and
	// authorization.
	// +optional
	OAuth2 *monitoringv1.OAuth2 `json:"oauth2,omitempty"`
	// TLSConfig of the requests, from Secrets and ConfigMaps of the
	// server's namespace, or files.
	// +optional
	TLSConfig *monitoringv1.TLSConfig `json:"tlsConfig,omitempty"`
	// ProxyConfig: the proxy of the requests.
	// +optional
	monitoringv1.ProxyConfig `json:",inline"`
	// FollowRedirects follows HTTP 3xx redirects.
	// +optional
	FollowRedirects *bool `json:"followRedirects,omitempty"`
	// EnableHttp2 lets the requests use HTTP/2.
	// +optional
	EnableHttp2 *bool `json:"enableHTTP2,omitempty"`
	// RemoteTimeout of a request to the endpoint; unset is 30s.
	// +optional
	RemoteTimeout *monitoringv1.Duration `json:"remoteTimeout,omitempty"`
	// Headers sent with each request.
	// +optional
	Headers map[string]string `json:"headers,omitempty"`
	// SendExemplars sends the exemplars (with the exemplar-storage
	// feature).
	// +optional
	SendExemplars *bool `json:"sendExemplars,omitempty"`
	// SendNativeHistograms sends the native histograms.
	// +optional
	SendNativeHistograms *bool `json:"sendNativeHistograms,omitempty"`
	// WriteRelabelConfigs relabel the series before they are sent.
	// +optional
	WriteRelabelConfigs []monitoringv1.RelabelConfig `json:"writeRelabelConfigs,omitempty"`
	// QueueConfig tunes the queue of the endpoint (maxRetries, which
	// Prometheus 2.11 and later ignore, is not rendered).
	// +optional
	QueueConfig *monitoringv1.QueueConfig `json:"queueConfig,omitempty"`
	// MetadataConfig tunes the sending of series metadata.
	// +optional
	MetadataConfig *monitoringv1.MetadataConfig `json:"metadataConfig,omitempty"`
	// RemoteWriteTakenOver are the settings of a taken-over object's
	// remote write that the PrometheusServer kind does not have.
	RemoteWriteTakenOver `json:"-"`
}

// RemoteWriteTakenOver are the settings of the remote write of a
// Prometheus or PrometheusAgent taken over that the PrometheusServer kind
// does not have: the model carries them, the API does not. They are
// rendered as prometheus-operator's generator renders them, for the
// Prometheus versions that have them.
type RemoteWriteTakenOver struct {
	// Sigv4 signs the requests with AWS Signature Version 4 (sigv4), the
	// access and secret keys from Secrets of the server's namespace.
	Sigv4 *monitoringv1.Sigv4 `json:"-"`
	// AzureAD authenticates the requests with Azure AD (azuread), the
	// OAuth client secret from a Secret of the server's namespace.
	AzureAD *monitoringv1.AzureAD `json:"-"`
	// BearerToken (bearer_token) and BearerTokenFile (bearer_token_file)
	// are the deprecated bearer token of the requests, and its file.
	BearerToken     string `json:"-"`
	BearerTokenFile string `json:"-"`
	// MessageVersion is the remote write protocol's message
	// (protobuf_message): V1.0 or V2.0.
	MessageVersion *monitoringv1.RemoteWriteMessageVersion `json:"-"`
	// RoundRobinDNS spreads the requests over the addresses the host
	// resolves to (round_robin_dns).
	RoundRobinDNS *bool `json:"-"`
}
