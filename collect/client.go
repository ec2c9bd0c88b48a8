package collect

import (
	"fmt"
	"net"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// Ping says how soon a connection to the API server that went silent
// (a node lost, a NAT entry dropped: no FIN, no RST) is found out: after
// PingAfter without a frame an HTTP/2 ping is sent, and the connection
// is closed when it is not answered within PingTimeout. A watch on it
// then fails and is started again, within about 10 s, where waiting for
// the client timeout of the watch took a minute.
const (
	PingAfter   = 5 * time.Second
	PingTimeout = 5 * time.Second
)

// NewRESTClient returns a client of the core API group (ConfigMaps and
// Secrets, in protobuf) for cfg, whose connections are pinged when idle
// (PingAfter). It registers only the core group's types: the whole
// client-go scheme costs memory a sidecar does not need.
func NewRESTClient(cfg *rest.Config) (rest.Interface, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("API server TLS: %w", err)
	}
	transport := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSClientConfig:     tlsConfig,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 15 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		HTTP2:               &http.HTTP2Config{SendPingTimeout: PingAfter, PingTimeout: PingTimeout},
	}
	rt, err := rest.HTTPWrappersForConfig(cfg, transport)
	if err != nil {
		return nil, fmt.Errorf("API server credentials: %w", err)
	}
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	c.UserAgent = "podreload-collector"
	if c.QPS == 0 {
		c.QPS, c.Burst = 20, 40
	}
	return rest.RESTClientForConfigAndClient(c, &http.Client{Transport: rt})
}
