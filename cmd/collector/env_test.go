package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/collect"
)

func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

// TestDefaults: k8s-sidecar's defaults with only LABEL and FOLDER set.
func TestDefaults(t *testing.T) {
	c, err := parseEnv(lookup(map[string]string{"LABEL": "grafana_dashboard", "FOLDER": "/tmp/dashboards"}), "", "")
	require.NoError(t, err)
	want := collect.Options{
		Label: "grafana_dashboard", Folder: "/tmp/dashboards", FolderAnnotation: "k8s-sidecar-target-directory",
		Resources: []collect.Resource{collect.ConfigMap}, Method: collect.Watch,
		SleepTime: 60 * time.Second, ServerTimeout: 60 * time.Second, ClientTimeout: 66 * time.Second, ErrorThrottle: 5 * time.Second,
		HTTP:   collect.HTTP{Timeout: 10 * time.Second, Retry: collect.Retry{Total: 5, Connect: 10, Read: 5, BackoffFactor: 1.1}, Latin1: true},
		Reload: collect.Reload{Method: "GET"},
	}
	require.Empty(t, cmp.Diff(want, c.opts))
	require.True(t, c.defaultNamespace)
	require.Equal(t, 8080, c.healthPort)
	require.Empty(t, c.healthHost)
	require.Equal(t, "info", c.logLevel)
	require.True(t, c.logJSON)
	require.False(t, c.logUTC)
	require.Empty(t, c.notes)
}

// TestEveryVariable sets each of k8s-sidecar's variables.
func TestEveryVariable(t *testing.T) {
	env := map[string]string{
		"LABEL": "grafana_datasource", "LABEL_VALUE": "1", "FOLDER": "/etc/grafana/provisioning/datasources",
		"FOLDER_ANNOTATION": "grafana_folder", "NAMESPACE": "monitoring, apps ,monitoring", "RESOURCE": "both",
		"RESOURCE_NAME": "secret/ds,apps/configmap/dash", "METHOD": "SLEEP", "SLEEP_TIME": "30",
		"REQ_URL": "http://localhost:3000/api/admin/provisioning/datasources/reload", "REQ_METHOD": "post",
		"REQ_PAYLOAD": `{"a":1}`, "REQ_RETRY_TOTAL": "3", "REQ_RETRY_CONNECT": "4", "REQ_RETRY_READ": "2",
		"REQ_RETRY_BACKOFF_FACTOR": "0.5", "REQ_TIMEOUT": "2.5", "REQ_USERNAME": "admin", "REQ_PASSWORD": "pw",
		"REQ_USERNAME_FILE": "/u", "REQ_PASSWORD_FILE": "/p", "REQ_BASIC_AUTH_ENCODING": "utf-8",
		"REQ_SKIP_INIT": "true", "REQ_SKIP_TLS_VERIFY": "true", "SCRIPT": "/s.sh", "ERROR_THROTTLE_SLEEP": "2",
		"SKIP_TLS_VERIFY": "true", "UNIQUE_FILENAMES": "TRUE", "DEFAULT_FILE_MODE": "440", "KUBECONFIG": "/k",
		"ENABLE_5XX": "true", "WATCH_SERVER_TIMEOUT": "3600", "WATCH_CLIENT_TIMEOUT": "20",
		"IGNORE_ALREADY_PROCESSED": "true", "LOG_LEVEL": "warning", "LOG_FORMAT": "LOGFMT", "LOG_TZ": "utc",
		"HEALTH_PORT": "9090", "HEALTH_HOST": "::", "DISABLE_X509_STRICT_VERIFICATION": "true", "LOG_CONFIG": "/l.yaml",
	}
	c, err := parseEnv(lookup(env), "/flag-u", "")
	require.NoError(t, err)
	want := collect.Options{
		Label: "grafana_datasource", LabelValue: "1", Folder: "/etc/grafana/provisioning/datasources", FolderAnnotation: "grafana_folder",
		Namespaces: []string{"monitoring", "apps"}, Resources: []collect.Resource{collect.Secret, collect.ConfigMap},
		Names: []string{"secret/ds", "apps/configmap/dash"}, Method: collect.Sleep, SleepTime: 30 * time.Second,
		ServerTimeout: time.Hour, ClientTimeout: 20 * time.Second, ErrorThrottle: 2 * time.Second,
		IgnoreAlreadyProcessed: true, UniqueFilenames: true, FileMode: fs.FileMode(0o440), SkipInitReload: true,
		HTTP: collect.HTTP{
			Timeout: 2500 * time.Millisecond, Retry: collect.Retry{Total: 3, Connect: 4, Read: 2, BackoffFactor: 0.5},
			Accept5xx: true, SkipTLSVerify: true, Username: "admin", Password: "pw", UsernameFile: "/flag-u", PasswordFile: "/p",
		},
		Reload: collect.Reload{URL: env["REQ_URL"], Method: "POST", Payload: []byte(`{"a":1}`), Script: "/s.sh"},
	}
	require.Empty(t, cmp.Diff(want, c.opts))
	require.False(t, c.defaultNamespace)
	require.Equal(t, "/k", c.kubeconfig)
	require.True(t, c.skipTLSVerify)
	require.Equal(t, 9090, c.healthPort)
	require.Equal(t, "::", c.healthHost)
	require.Equal(t, "warn", c.logLevel)
	require.False(t, c.logJSON)
	require.True(t, c.logUTC)
	require.Len(t, c.notes, 2, "DISABLE_X509_STRICT_VERIFICATION and LOG_CONFIG")
}

func TestNamespaceAllAndPayload(t *testing.T) {
	c, err := parseEnv(lookup(map[string]string{"LABEL": "l", "FOLDER": "/f", "NAMESPACE": "ALL", "REQ_PAYLOAD": "not json", "METHOD": "LIST"}), "", "")
	require.NoError(t, err)
	require.Nil(t, c.opts.Namespaces)
	require.False(t, c.defaultNamespace)
	require.Equal(t, `"not json"`, string(c.opts.Reload.Payload))
	require.Equal(t, collect.List, c.opts.Method)
	require.Len(t, c.notes, 1)
}

// TestConfigErrors: bad values exit 2 with a message naming the
// variable; a URL is never shown.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "collector: LABEL is not set: it names the label of the ConfigMaps and Secrets to collect; FOLDER is not set: it names the directory the files go into\n"},
		{map[string]string{"LABEL": "l", "FOLDER": "/f", "RESOURCE": "pods"}, "collector: RESOURCE=\"pods\": want configmap, secret or both\n"},
		{map[string]string{"LABEL": "l", "FOLDER": "/f", "REQ_URL": "ftp://u:secret@h"}, "collector: REQ_URL (not shown, it may hold a secret): want an http or https URL with a host\n"},
		{map[string]string{"LABEL": "l", "FOLDER": "/f", "REQ_METHOD": "PUT"}, "collector: REQ_METHOD=\"PUT\": want GET or POST\n"},
		{map[string]string{"LABEL": "l", "FOLDER": "/f", "SLEEP_TIME": "soon"}, "collector: SLEEP_TIME=\"soon\": want a number of seconds\n"},
		{map[string]string{"LABEL": "l", "FOLDER": "/f", "REQ_RETRY_TOTAL": "-1"}, "collector: REQ_RETRY_TOTAL=\"-1\": want a whole number\n"},
		{map[string]string{"LABEL": "l", "FOLDER": "/f", "DEFAULT_FILE_MODE": "rw"}, "collector: DEFAULT_FILE_MODE=\"rw\": want octal digits such as 644 or 440\n"},
		{map[string]string{"LABEL": "l", "FOLDER": "/f", "REQ_BASIC_AUTH_ENCODING": "ebcdic"}, "collector: REQ_BASIC_AUTH_ENCODING=\"ebcdic\": want latin1 or utf-8\n"},
		{map[string]string{"LABEL": "l", "FOLDER": "/f", "LOG_LEVEL": "loud"}, "collector: LOG_LEVEL=\"LOUD\": want DEBUG, INFO, WARN, ERROR or CRITICAL\n"},
		{map[string]string{"LABEL": "l", "FOLDER": "/f", "HEALTH_PORT": "70000"}, "collector: HEALTH_PORT=70000: want a port number\n"},
		{map[string]string{"LABEL": "l", "FOLDER": "/f", "NAMESPACE": "ns", "KUBECONFIG": "/nonexistent", "HOME": "/nonexistent"}, ""},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), nil, lookup(tc.env), &stderr)
		if tc.want == "" {
			require.Equal(t, 2, code)
			require.Contains(t, stderr.String(), "collector: no kubeconfig (KUBECONFIG, ~/.kube/config) and not in a pod")
			continue
		}
		require.Equal(t, 2, code, tc.env)
		require.Equal(t, tc.want, stderr.String())
		require.NotContains(t, stderr.String(), "secret@")
	}
}

func TestUnknownFlag(t *testing.T) {
	var stderr bytes.Buffer
	require.Equal(t, 2, run(context.Background(), []string{"--nope"}, lookup(nil), &stderr))
	require.Contains(t, stderr.String(), "unknown long flag '--nope'")
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestKubeConfig: KUBECONFIG's file when it exists; SKIP_TLS_VERIFY drops
// its CA and verifies nothing.
func TestKubeConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443", certificate-authority-data: "`+base64.StdEncoding.EncodeToString([]byte("not a CA"))+`"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
current-context: c
`), 0o600))
	c, err := kubeConfig(config{kubeconfig: path})
	require.NoError(t, err)
	require.Equal(t, "https://10.0.0.1:6443", c.Host)
	require.False(t, c.Insecure)
	require.NotEmpty(t, c.CAData)
	c, err = kubeConfig(config{kubeconfig: path, skipTLSVerify: true})
	require.NoError(t, err)
	require.True(t, c.Insecure)
	require.Empty(t, c.CAData)
}

// TestListUnreachable: METHOD=LIST against an API server that does not
// answer exits 1 after its retries, naming what it listed.
func TestListUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://`+addr+`"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {}}]
current-context: c
`), 0o600))
	var stderr bytes.Buffer
	code := run(t.Context(), nil, lookup(map[string]string{
		"LABEL": "l", "FOLDER": t.TempDir(), "NAMESPACE": "ns", "KUBECONFIG": path, "METHOD": "LIST", "ERROR_THROTTLE_SLEEP": "0.05",
	}), &stderr)
	require.Equal(t, 1, code, stderr.String())
	require.Contains(t, stderr.String(), `"msg":"run","err":"list configmaps l in ns: `)
}

// TestLogger: LOG_LEVEL drops what is below it, LOG_FORMAT is JSON or
// logfmt, LOG_TZ=UTC logs times in UTC where LOCAL keeps their zone.
func TestLogger(t *testing.T) {
	at := time.Date(2026, 3, 4, 12, 30, 0, 0, time.FixedZone("CEST", 2*3600))
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"defaults", nil, `{"time":"2026-03-04T12:30:00+02:00","level":"INFO","msg":"m","k":"v"}` + "\n"},
		{"UTC", map[string]string{"LOG_TZ": "UTC"}, `{"time":"2026-03-04T10:30:00Z","level":"INFO","msg":"m","k":"v"}` + "\n"},
		{"logfmt, UTC", map[string]string{"LOG_FORMAT": "LOGFMT", "LOG_TZ": "utc"}, `time=2026-03-04T10:30:00.000Z level=INFO msg=m k=v` + "\n"},
		{"ERROR drops INFO", map[string]string{"LOG_LEVEL": "ERROR"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"LABEL": "l", "FOLDER": "/f"}
			maps.Copy(env, tc.env)
			c, err := parseEnv(lookup(env), "", "")
			require.NoError(t, err)
			var out bytes.Buffer
			logger := newLogger(c, &out)
			if logger.Enabled(t.Context(), slog.LevelInfo) {
				r := slog.NewRecord(at, slog.LevelInfo, "m", 0)
				r.AddAttrs(slog.String("k", "v"))
				require.NoError(t, logger.Handler().Handle(t.Context(), r))
			}
			// The source of a record made here is no caller's.
			got := regexp.MustCompile(`"source":"[^"]*",|source=\S+ `).ReplaceAllString(out.String(), "")
			require.Equal(t, tc.want, got)
		})
	}
}
