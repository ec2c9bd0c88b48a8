package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/podreload/podreload/collect"
)

// config is what the environment says, k8s-sidecar's variables with its
// defaults (docs/collector.md has the table).
type config struct {
	opts             collect.Options
	kubeconfig       string
	skipTLSVerify    bool
	healthHost       string
	healthPort       int
	logLevel         string // debug, info, warn, error
	logJSON, logUTC  bool
	logConfig        string // LOG_CONFIG: not supported, warned about
	notes            []string
	defaultNamespace bool // NAMESPACE unset: the pod's own
}

// env reads variables, collecting the errors of those that do not parse.
type env struct {
	lookup func(string) (string, bool)
	errs   []error
}

func (e *env) get(name, def string) string {
	if v, ok := e.lookup(name); ok {
		return v
	}
	return def
}

func (e *env) fail(format string, args ...any) { e.errs = append(e.errs, fmt.Errorf(format, args...)) }

func (e *env) seconds(name, def string) time.Duration {
	v := e.get(name, def)
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 0 {
		e.fail("%s=%q: want a number of seconds", name, v)
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

func (e *env) integer(name, def string) int {
	v := e.get(name, def)
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		e.fail("%s=%q: want a whole number", name, v)
	}
	return n
}

func (e *env) boolean(name string) bool {
	return strings.EqualFold(strings.TrimSpace(e.get(name, "")), "true")
}

// parseEnv reads the configuration from lookup (os.LookupEnv); the
// flags' files take precedence over REQ_USERNAME_FILE and
// REQ_PASSWORD_FILE.
func parseEnv(lookup func(string) (string, bool), usernameFile, passwordFile string) (config, error) {
	e := &env{lookup: lookup}
	var c config
	c.selection(e)
	c.files(e)
	c.reload(e)
	c.http(e, usernameFile, passwordFile)
	c.process(e)
	return c, errors.Join(e.errs...)
}

// selection reads what is collected, and how.
func (c *config) selection(e *env) {
	o := &c.opts
	o.Label, o.LabelValue = e.get("LABEL", ""), e.get("LABEL_VALUE", "")
	if o.Label == "" {
		e.fail("LABEL is not set: it names the label of the ConfigMaps and Secrets to collect")
	}
	ns, set := e.lookup("NAMESPACE")
	c.defaultNamespace = !set
	if set && strings.TrimSpace(ns) != "ALL" {
		o.Namespaces = splitList(ns)
	}
	switch r := strings.ToLower(strings.TrimSpace(e.get("RESOURCE", "configmap"))); r {
	case "configmap":
		o.Resources = []collect.Resource{collect.ConfigMap}
	case "secret":
		o.Resources = []collect.Resource{collect.Secret}
	case "both":
		o.Resources = []collect.Resource{collect.Secret, collect.ConfigMap}
	default:
		e.fail("RESOURCE=%q: want configmap, secret or both", r)
	}
	o.Names = splitList(e.get("RESOURCE_NAME", ""))
	switch strings.ToUpper(strings.TrimSpace(e.get("METHOD", ""))) {
	case "LIST":
		o.Method = collect.List
	case "SLEEP":
		o.Method = collect.Sleep
	default:
		o.Method = collect.Watch
	}
	o.SleepTime = e.seconds("SLEEP_TIME", "60")
	o.ServerTimeout = e.seconds("WATCH_SERVER_TIMEOUT", "60")
	o.ClientTimeout = e.seconds("WATCH_CLIENT_TIMEOUT", "66")
	o.ErrorThrottle = e.seconds("ERROR_THROTTLE_SLEEP", "5")
	o.IgnoreAlreadyProcessed = e.boolean("IGNORE_ALREADY_PROCESSED")
}

// files reads where files go, and how they are named.
func (c *config) files(e *env) {
	o := &c.opts
	o.Folder = e.get("FOLDER", "")
	if o.Folder == "" {
		e.fail("FOLDER is not set: it names the directory the files go into")
	}
	o.FolderAnnotation = e.get("FOLDER_ANNOTATION", "k8s-sidecar-target-directory")
	o.UniqueFilenames = e.boolean("UNIQUE_FILENAMES")
	if v := strings.TrimSpace(e.get("DEFAULT_FILE_MODE", "")); v != "" {
		mode, err := strconv.ParseUint(v, 8, 32)
		if err != nil || mode > 0o7777 {
			e.fail("DEFAULT_FILE_MODE=%q: want octal digits such as 644 or 440", v)
		}
		o.FileMode = fs.FileMode(mode)
	}
}

// reload reads what is done after a burst of changes.
func (c *config) reload(e *env) {
	r := &c.opts.Reload
	r.URL = e.get("REQ_URL", "")
	if r.URL != "" {
		if u, err := url.Parse(r.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			e.fail("REQ_URL (not shown, it may hold a secret): want an http or https URL with a host")
		}
	}
	switch m := strings.ToUpper(strings.TrimSpace(e.get("REQ_METHOD", "GET"))); m {
	case "GET", "":
		r.Method = "GET"
	case "POST":
		r.Method = "POST"
	default:
		e.fail("REQ_METHOD=%q: want GET or POST", m)
	}
	if p := e.get("REQ_PAYLOAD", ""); p != "" {
		if json.Valid([]byte(p)) {
			r.Payload = []byte(p)
		} else {
			// k8s-sidecar posts what is not JSON as a JSON string.
			r.Payload, _ = json.Marshal(p)
			c.notes = append(c.notes, "REQ_PAYLOAD is not JSON: it is sent as a JSON string")
		}
	}
	r.Script = e.get("SCRIPT", "")
	c.opts.SkipInitReload = e.boolean("REQ_SKIP_INIT")
}

// http reads the retries, timeout and credentials of the requests.
func (c *config) http(e *env, usernameFile, passwordFile string) {
	h := &c.opts.HTTP
	h.Retry = collect.Retry{
		Total:   e.integer("REQ_RETRY_TOTAL", "5"),
		Connect: e.integer("REQ_RETRY_CONNECT", "10"),
		Read:    e.integer("REQ_RETRY_READ", "5"),
	}
	v := e.get("REQ_RETRY_BACKOFF_FACTOR", "1.1")
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 0 {
		e.fail("REQ_RETRY_BACKOFF_FACTOR=%q: want a number", v)
	}
	h.Retry.BackoffFactor = f
	h.Timeout = e.seconds("REQ_TIMEOUT", "10")
	h.Username, h.Password = e.get("REQ_USERNAME", ""), e.get("REQ_PASSWORD", "")
	h.UsernameFile, h.PasswordFile = e.get("REQ_USERNAME_FILE", ""), e.get("REQ_PASSWORD_FILE", "")
	if usernameFile != "" {
		h.UsernameFile = usernameFile
	}
	if passwordFile != "" {
		h.PasswordFile = passwordFile
	}
	switch enc := strings.ToLower(strings.TrimSpace(e.get("REQ_BASIC_AUTH_ENCODING", "latin1"))); enc {
	case "latin1", "latin-1", "iso-8859-1", "iso8859-1", "":
		h.Latin1 = true
	case "utf-8", "utf8":
	default:
		e.fail("REQ_BASIC_AUTH_ENCODING=%q: want latin1 or utf-8", enc)
	}
	h.SkipTLSVerify = e.boolean("REQ_SKIP_TLS_VERIFY")
	h.Accept5xx = e.boolean("ENABLE_5XX")
}

// process reads the API server's access, the health endpoint and the logs.
func (c *config) process(e *env) {
	c.kubeconfig = e.get("KUBECONFIG", "")
	c.skipTLSVerify = e.boolean("SKIP_TLS_VERIFY")
	if e.boolean("DISABLE_X509_STRICT_VERIFICATION") {
		c.notes = append(c.notes, "DISABLE_X509_STRICT_VERIFICATION has no effect: Go's verifier has no strict mode to turn off")
	}
	c.healthHost = e.get("HEALTH_HOST", "")
	c.healthPort = e.integer("HEALTH_PORT", "8080")
	if c.healthPort > 65535 {
		e.fail("HEALTH_PORT=%d: want a port number", c.healthPort)
	}
	switch l := strings.ToUpper(strings.TrimSpace(e.get("LOG_LEVEL", "INFO"))); l {
	case "DEBUG":
		c.logLevel = "debug"
	case "INFO":
		c.logLevel = "info"
	case "WARN", "WARNING":
		c.logLevel = "warn"
	case "ERROR", "CRITICAL":
		c.logLevel = "error"
	default:
		e.fail("LOG_LEVEL=%q: want DEBUG, INFO, WARN, ERROR or CRITICAL", l)
	}
	switch f := strings.ToUpper(strings.TrimSpace(e.get("LOG_FORMAT", "JSON"))); f {
	case "JSON":
		c.logJSON = true
	case "LOGFMT":
	default:
		// As k8s-sidecar, which falls back to JSON.
		c.logJSON = true
		c.notes = append(c.notes, fmt.Sprintf("LOG_FORMAT=%q is neither JSON nor LOGFMT: logging JSON", f))
	}
	c.logUTC = strings.EqualFold(strings.TrimSpace(e.get("LOG_TZ", "LOCAL")), "UTC")
	if c.logConfig = e.get("LOG_CONFIG", ""); c.logConfig != "" {
		c.notes = append(c.notes, "LOG_CONFIG (a Python logging configuration) is not supported: LOG_LEVEL, LOG_FORMAT and LOG_TZ apply")
	}
}

// splitList splits a comma-separated list, trimmed, without empty or
// repeated entries.
func splitList(s string) []string {
	var out []string
	seen := map[string]bool{}
	for p := range strings.SplitSeq(s, ",") {
		p = strings.TrimSpace(p)
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
