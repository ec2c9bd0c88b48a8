package collect

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/podreload/podreload/reloader"
)

// Retry bounds the retries of an HTTP request, as k8s-sidecar's
// REQ_RETRY_* do (urllib3's Retry): at most Total retries in all, of
// which at most Connect after a connection error and Read after an error
// reading the answer; an answer 500, 502, 503 or 504 is retried too
// (unless HTTP.Accept5xx). The n-th retry waits BackoffFactor * 2^(n-1)
// seconds, the first none, at most 120 s.
type Retry struct {
	// Total is REQ_RETRY_TOTAL (5).
	Total int
	// Connect is REQ_RETRY_CONNECT (10).
	Connect int
	// Read is REQ_RETRY_READ (5).
	Read int
	// BackoffFactor is REQ_RETRY_BACKOFF_FACTOR (1.1).
	BackoffFactor float64
}

// wait returns the wait before the n-th retry.
func (r Retry) wait(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	s := min(r.BackoffFactor*math.Pow(2, float64(n-1)), 120)
	return time.Duration(s * float64(time.Second))
}

// HTTP configures the requests to REQ_URL and the fetches of .url keys.
type HTTP struct {
	// Timeout is REQ_TIMEOUT: how long to wait for an answer (10 s).
	Timeout time.Duration
	// Retry bounds the retries.
	Retry Retry
	// Accept5xx is ENABLE_5XX: an answer 5xx is taken as it is, its body
	// the content of a .url key, and not retried.
	Accept5xx bool
	// SkipTLSVerify is REQ_SKIP_TLS_VERIFY.
	SkipTLSVerify bool
	// Username and Password are REQ_USERNAME and REQ_PASSWORD: basic auth
	// is sent when both are set.
	Username, Password string
	// UsernameFile and PasswordFile, when set, hold the user name and
	// password instead (REQ_USERNAME_FILE, REQ_PASSWORD_FILE, or the
	// flags --req-username-file, --req-password-file); read again for
	// every request, trimmed. A file that cannot be read leaves the
	// variable's value.
	UsernameFile, PasswordFile string
	// Latin1 encodes the user name and password in ISO-8859-1 (k8s-sidecar's
	// default REQ_BASIC_AUTH_ENCODING, latin1), else in UTF-8.
	Latin1 bool
}

// requester sends HTTP requests with HTTP's retries and credentials.
type requester struct {
	opts   HTTP
	client *http.Client
}

func newRequester(opts HTTP) *requester {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if opts.SkipTLSVerify {
		// REQ_SKIP_TLS_VERIFY asks for it.
		t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	}
	t.MaxIdleConnsPerHost = 2
	return &requester{opts: opts, client: &http.Client{Transport: t, Timeout: opts.Timeout}}
}

// response is an answer: its status and at most limit bytes of its body.
type response struct {
	status int
	body   []byte
}

// errTooLarge is the error of a body past its limit.
var errTooLarge = errors.New("answer too large")

// do sends method to rawURL with body (JSON) and returns the answer
// after the retries. Its errors show the URL redacted.
func (r *requester) do(ctx context.Context, method, rawURL string, body []byte, limit int64) (response, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return response{}, errors.New("not an http(s) URL (not shown, it may hold a secret)")
	}
	shown := reloader.RedactURL(u)
	auth, err := r.authorization()
	if err != nil {
		return response{}, err
	}
	var retries, connects, reads int
	for {
		resp, err := r.once(ctx, method, u, body, auth, limit)
		retry := false
		switch {
		case ctx.Err() != nil:
			return response{}, ctx.Err()
		case errors.Is(err, errTooLarge):
			return response{}, fmt.Errorf("%s %s: %w (over %d bytes)", method, shown, err, limit)
		case err != nil && isConnect(err):
			connects++
			retry = connects <= r.opts.Retry.Connect
		case err != nil:
			reads++
			retry = reads <= r.opts.Retry.Read
		case retryable(resp.status) && !r.opts.Accept5xx:
			retry = true
			err = fmt.Errorf("answered %d", resp.status)
		default:
			return resp, nil
		}
		retries++
		if !retry || retries > r.opts.Retry.Total {
			return response{}, fmt.Errorf("%s %s: %w (after %d retries)", method, shown, redactErr(err), retries-1)
		}
		if wait := r.opts.Retry.wait(retries); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return response{}, ctx.Err()
			case <-t.C:
			}
		}
	}
}

func (r *requester) once(ctx context.Context, method string, u *url.URL, body []byte, auth string, limit int64) (response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return response{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("User-Agent", "podreload-collector")
	resp, err := r.client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return response{}, err
	}
	if int64(len(b)) > limit {
		return response{}, errTooLarge
	}
	return response{status: resp.StatusCode, body: b}, nil
}

// authorization returns the basic auth header, empty without both a user
// name and a password.
func (r *requester) authorization() (string, error) {
	user, password := r.opts.Username, r.opts.Password
	if b, err := readTrimmed(r.opts.UsernameFile); err == nil {
		user = b
	}
	if b, err := readTrimmed(r.opts.PasswordFile); err == nil {
		password = b
	}
	if user == "" || password == "" {
		return "", nil
	}
	cred := []byte(user + ":" + password)
	if r.opts.Latin1 {
		var err error
		if cred, err = latin1(user + ":" + password); err != nil {
			return "", fmt.Errorf("basic auth: %w; set REQ_BASIC_AUTH_ENCODING=utf-8", err)
		}
	}
	return "Basic " + base64.StdEncoding.EncodeToString(cred), nil
}

func readTrimmed(path string) (string, error) {
	if path == "" {
		return "", os.ErrNotExist
	}
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

// latin1 encodes s in ISO-8859-1.
func latin1(s string) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return nil, errors.New("the user name or password has a character that latin1 cannot encode")
		}
		out = append(out, byte(r))
	}
	return out, nil
}

func retryable(status int) bool {
	switch status {
	case 500, 502, 503, 504:
		return true
	}
	return false
}

// isConnect reports whether err happened before the request was sent.
func isConnect(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// redactErr drops the URL net/http's errors quote: it may hold a secret.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
