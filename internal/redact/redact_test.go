package redact

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:9090/-/reload", "http://127.0.0.1:9090/-/reload"},
		{"http://admin@host/", "http://admin@host/"},
		{"http://admin:s3cret@host/", "http://admin:xxxxx@host/"},
		{"https://host/reload?token=s3cret", "https://host/reload?token=xxxxx"},
		{"https://host/reload?a=1&a=2&b=&c", "https://host/reload?a=xxxxx&a=xxxxx&b=&xxxxx"},
		{"https://host/reload?s3cret", "https://host/reload?xxxxx"},
		{"https://host/reload?t=a%20b&&u=x=y", "https://host/reload?t=xxxxx&&u=xxxxx"},
		{"https://host/reload#s3cret", "https://host/reload#xxxxx"},
		{"https://u:p@host/reload?token=s3cret#f", "https://u:xxxxx@host/reload?token=xxxxx#xxxxx"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			u, err := url.Parse(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, URL(u))
			require.Equal(t, tc.in, u.String(), "u is left as it was")
		})
	}
	require.Empty(t, URL(nil))
}
