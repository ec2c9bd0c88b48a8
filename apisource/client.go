// Package apisource reads a Secret and ConfigMaps straight from the
// Kubernetes API server, for the config-reloader's API source: a change is
// seen about a millisecond after the API server stores it, where the
// kubelet's projection into a volume waits for its next pod sync (60 to 90 s
// by default).
//
// Each kind is listed, then watched from the list's resourceVersion with
// bookmarks, so that a watch that ends (the server's timeout, a restart, a
// lost connection) resumes where it stopped, and a change made in between
// arrives after. A watch too old to resume (410 Gone) lists again. An
// unreachable API server is retried with backoff while the last state read
// is kept.
//
// It speaks the API's JSON over net/http with the service account's token,
// written by hand for memory: with 1,000 rule ConfigMaps of 4 KiB, client-go's
// typed informers peak at 40.8 MiB RSS and its dynamic client at 36.9 MiB,
// this client at 20.9 MiB (pages of 100 objects), against a target of 24;
// idle, 26.1 and 14.3 MiB against 10.1 (docs/api-source.md).
package apisource

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/podreload/podreload/reloader"
)

// In-cluster defaults: where the kubelet mounts the pod's service account.
const (
	serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	// DefaultTokenFile is the service account token in a pod.
	DefaultTokenFile = serviceAccountDir + "/token"
	// DefaultCAFile is the API server's CA in a pod.
	DefaultCAFile = serviceAccountDir + "/ca.crt"
	// DefaultNamespaceFile holds the pod's namespace.
	DefaultNamespaceFile = serviceAccountDir + "/namespace"
)

// Config says how to reach the API server.
type Config struct {
	// Server is the API server's URL; empty means the in-cluster one,
	// https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT.
	Server string
	// TokenFile holds the bearer token. It is read again for every
	// request, so a token the kubelet rotated is used at once.
	TokenFile string
	// CAFile holds the certificates that verify the API server.
	CAFile string
}

// client makes requests to the API server.
type client struct {
	server    *url.URL
	tokenFile string
	http      *http.Client
}

func newClient(cfg Config) (*client, error) {
	server := cfg.Server
	if server == "" {
		host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
		if host == "" || port == "" {
			return nil, errors.New("no API server: not in a pod (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set), and none given")
		}
		server = "https://" + net.JoinHostPort(host, port)
	}
	u, err := url.Parse(server)
	switch {
	case err != nil:
		// Its error quotes the URL, which may hold a password.
		return nil, errors.New("API server URL (not shown, it may hold a secret) does not parse")
	case (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return nil, fmt.Errorf("API server %q is not an http(s) URL", reloader.RedactURL(u))
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read the API server's CA: %w", err)
		}
		tlsConfig.RootCAs = x509.NewCertPool()
		if !tlsConfig.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("read the API server's CA: no certificate in %s", cfg.CAFile)
		}
	}
	transport := &http.Transport{
		TLSClientConfig:     tlsConfig,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		// Two watches and a list at a time.
		MaxIdleConnsPerHost: 3,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
		// A watch on a connection that died silently (a node lost, a NAT
		// entry dropped) would wait forever: a ping after 30 s without a
		// frame finds it out.
		HTTP2: &http.HTTP2Config{SendPingTimeout: 30 * time.Second, PingTimeout: 15 * time.Second},
	}
	return &client{server: u, tokenFile: cfg.TokenFile, http: &http.Client{Transport: transport}}, nil
}

// get sends GET path?query and returns the response of a 200; any other
// status is an error carrying the API server's message (a forbidden
// request's names the user, the verb and the resource).
func (c *client) get(ctx context.Context, path string, query url.Values) (*http.Response, error) {
	u := *c.server
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	return c.do(req)
}

// mergePatch sends a JSON merge patch to path and discards the object the
// API server answers with; any status but 200 is an error as for get.
func (c *client) mergePatch(ctx context.Context, path string, patch []byte) error {
	u := *c.server
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, u.String(), bytes.NewReader(patch))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/merge-patch+json")
	resp, err := c.do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return nil
}

// do sends req with the service account's token and returns the response
// of a 200, or an error carrying the API server's message.
func (c *client) do(req *http.Request) (*http.Response, error) {
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "podreload-config-reloader")
	if c.tokenFile != "" {
		token, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("read the service account token: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, statusError(resp)
}

// apiStatus is the API's Status object: what an error response holds, and
// what a watch's ERROR event carries.
type apiStatus struct {
	Code    int    `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// StatusError is an answer of the API server other than 200.
type StatusError struct {
	Code    int
	Reason  string // Forbidden, NotFound, Expired, ...
	Message string
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("API server answered %d %s", e.Code, e.Reason)
	}
	return fmt.Sprintf("API server answered %d: %s", e.Code, e.Message)
}

// gone reports whether err says a resourceVersion is too old to watch from.
func gone(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == http.StatusGone
}

func statusError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var st apiStatus
	if json.Unmarshal(body, &st) != nil || st.Message == "" {
		st.Message = strings.TrimSpace(string(body))
	}
	return &StatusError{Code: resp.StatusCode, Reason: st.Reason, Message: st.Message}
}
