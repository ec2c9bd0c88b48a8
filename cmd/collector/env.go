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

// parseEnv reads the configuration from lookup (os.LookupEnv); the
// flags' files take precedence over REQ_USERNAME_FILE and
// REQ_PASSWORD_FILE.
func parseEnv(lookup func(string) (string, bool), usernameFile, passwordFile string) (config, error) {
	get := func(name, def string) string {
		if v, ok := lookup(name); ok {
			return v
		}
		return def
	}
	var errs []error
	seconds := func(name, def string) time.Duration {
		v := get(name, def)
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a number of seconds", name, v))
			return 0
		}
		return time.Duration(f * float64(time.Second))
	}
	integer := func(name, def string) int {
		v := get(name, def)
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a whole number", name, v))
		}
		return n
	}
	boolean := func(name string) bool { return strings.EqualFold(strings.TrimSpace(get(name, "")), "true") }

	var c config
	o := &c.opts
	o.Label = get("LABEL", "")
	o.LabelValue = get("LABEL_VALUE", "")
	o.Folder = get("FOLDER", "")
	if o.Label == "" {
		errs = append(errs, errors.New("LABEL is not set: it names the label of the ConfigMaps and Secrets to collect"))
	}
	if o.Folder == "" {
		errs = append(errs, errors.New("FOLDER is not set: it names the directory the files go into"))
	}
	o.FolderAnnotation = get("FOLDER_ANNOTATION", "k8s-sidecar-target-directory")
	ns, set := lookup("NAMESPACE")
	c.defaultNamespace = !set
	if set && strings.TrimSpace(ns) != "ALL" {
		o.Namespaces = splitList(ns)
	}
	switch r := strings.ToLower(strings.TrimSpace(get("RESOURCE", "configmap"))); r {
	case "configmap":
		o.Resources = []collect.Resource{collect.ConfigMap}
	case "secret":
		o.Resources = []collect.Resource{collect.Secret}
	case "both":
		o.Resources = []collect.Resource{collect.Secret, collect.ConfigMap}
	default:
		errs = append(errs, fmt.Errorf("RESOURCE=%q: want configmap, secret or both", r))
	}
	o.Names = splitList(get("RESOURCE_NAME", ""))
	switch strings.ToUpper(strings.TrimSpace(get("METHOD", ""))) {
	case "LIST":
		o.Method = collect.List
	case "SLEEP":
		o.Method = collect.Sleep
	default:
		o.Method = collect.Watch
	}
	o.SleepTime = seconds("SLEEP_TIME", "60")
	o.ServerTimeout = seconds("WATCH_SERVER_TIMEOUT", "60")
	o.ClientTimeout = seconds("WATCH_CLIENT_TIMEOUT", "66")
	o.ErrorThrottle = seconds("ERROR_THROTTLE_SLEEP", "5")
	o.IgnoreAlreadyProcessed = boolean("IGNORE_ALREADY_PROCESSED")
	o.UniqueFilenames = boolean("UNIQUE_FILENAMES")
	o.SkipInitReload = boolean("REQ_SKIP_INIT")
	if v := strings.TrimSpace(get("DEFAULT_FILE_MODE", "")); v != "" {
		mode, err := strconv.ParseUint(v, 8, 32)
		if err != nil || mode > 0o7777 {
			errs = append(errs, fmt.Errorf("DEFAULT_FILE_MODE=%q: want octal digits such as 644 or 440", v))
		}
		o.FileMode = fs.FileMode(mode)
	}

	o.Reload.URL = get("REQ_URL", "")
	if o.Reload.URL != "" {
		if u, err := url.Parse(o.Reload.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, errors.New("REQ_URL (not shown, it may hold a secret): want an http or https URL with a host"))
		}
	}
	switch m := strings.ToUpper(strings.TrimSpace(get("REQ_METHOD", "GET"))); m {
	case "GET", "":
		o.Reload.Method = "GET"
	case "POST":
		o.Reload.Method = "POST"
	default:
		errs = append(errs, fmt.Errorf("REQ_METHOD=%q: want GET or POST", m))
	}
	if p := get("REQ_PAYLOAD", ""); p != "" {
		if json.Valid([]byte(p)) {
			o.Reload.Payload = []byte(p)
		} else {
			// k8s-sidecar posts what is not JSON as a JSON string.
			o.Reload.Payload, _ = json.Marshal(p)
			c.notes = append(c.notes, "REQ_PAYLOAD is not JSON: it is sent as a JSON string")
		}
	}
	o.Reload.Script = get("SCRIPT", "")
	h := &o.HTTP
	h.Retry = collect.Retry{
		Total:   integer("REQ_RETRY_TOTAL", "5"),
		Connect: integer("REQ_RETRY_CONNECT", "10"),
		Read:    integer("REQ_RETRY_READ", "5"),
	}
	if v := get("REQ_RETRY_BACKOFF_FACTOR", "1.1"); v != "" {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < 0 {
			errs = append(errs, fmt.Errorf("REQ_RETRY_BACKOFF_FACTOR=%q: want a number", v))
		}
		h.Retry.BackoffFactor = f
	}
	h.Timeout = seconds("REQ_TIMEOUT", "10")
	h.Username, h.Password = get("REQ_USERNAME", ""), get("REQ_PASSWORD", "")
	h.UsernameFile, h.PasswordFile = get("REQ_USERNAME_FILE", ""), get("REQ_PASSWORD_FILE", "")
	if usernameFile != "" {
		h.UsernameFile = usernameFile
	}
	if passwordFile != "" {
		h.PasswordFile = passwordFile
	}
	switch e := strings.ToLower(strings.TrimSpace(get("REQ_BASIC_AUTH_ENCODING", "latin1"))); e {
	case "latin1", "latin-1", "iso-8859-1", "iso8859-1", "":
		h.Latin1 = true
	case "utf-8", "utf8":
	default:
		errs = append(errs, fmt.Errorf("REQ_BASIC_AUTH_ENCODING=%q: want latin1 or utf-8", e))
	}
	h.SkipTLSVerify = boolean("REQ_SKIP_TLS_VERIFY")
	h.Accept5xx = boolean("ENABLE_5XX")

	c.kubeconfig = get("KUBECONFIG", "")
	c.skipTLSVerify = boolean("SKIP_TLS_VERIFY")
	if boolean("DISABLE_X509_STRICT_VERIFICATION") {
		c.notes = append(c.notes, "DISABLE_X509_STRICT_VERIFICATION has no effect: Go's verifier has no strict mode to turn off")
	}
	c.healthHost = get("HEALTH_HOST", "")
	c.healthPort = integer("HEALTH_PORT", "8080")
	if c.healthPort > 65535 {
		errs = append(errs, fmt.Errorf("HEALTH_PORT=%d: want a port number", c.healthPort))
	}

	switch l := strings.ToUpper(strings.TrimSpace(get("LOG_LEVEL", "INFO"))); l {
	case "DEBUG":
		c.logLevel = "debug"
	case "INFO":
		c.logLevel = "info"
	case "WARN", "WARNING":
		c.logLevel = "warn"
	case "ERROR", "CRITICAL":
		c.logLevel = "error"
	default:
		errs = append(errs, fmt.Errorf("LOG_LEVEL=%q: want DEBUG, INFO, WARN, ERROR or CRITICAL", l))
	}
	switch f := strings.ToUpper(strings.TrimSpace(get("LOG_FORMAT", "JSON"))); f {
	case "JSON":
		c.logJSON = true
	case "LOGFMT":
	default:
		// As k8s-sidecar, which falls back to JSON.
		c.logJSON = true
		c.notes = append(c.notes, fmt.Sprintf("LOG_FORMAT=%q is neither JSON nor LOGFMT: logging JSON", f))
	}
	c.logUTC = strings.EqualFold(strings.TrimSpace(get("LOG_TZ", "LOCAL")), "UTC")
	if c.logConfig = get("LOG_CONFIG", ""); c.logConfig != "" {
		c.notes = append(c.notes, "LOG_CONFIG (a Python logging configuration) is not supported: LOG_LEVEL, LOG_FORMAT and LOG_TZ apply")
	}
	return c, errors.Join(errs...)
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
