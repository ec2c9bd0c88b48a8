package app

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		raw, want, err string
	}{
		{"https://admin:pw@prometheus:9090/-/reload?t=tok#frag", "https://admin:pw@prometheus:9090/-/reload?t=tok#frag", ""},
		{"http://admin:pw@[::1/?t=tok", "", "--x (not shown, it may hold a secret): missing ']' in host"},
		{"http://admin:pw/d@host/?t=tok", "", "--x (not shown, it may hold a secret): invalid port after host"},
		{"http://host/%zz?t=tok", "", "--x (not shown, it may hold a secret): invalid URL escape"},
		{"http://ho st/?t=tok", "", "--x (not shown, it may hold a secret): invalid character in host name"},
		{"/-/reload?t=tok", "", `--x "/-/reload?t=xxxxx": want an http or https URL with a host`},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			u, err := ParseURL("x", tc.raw)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, u.String())
		})
	}
}
