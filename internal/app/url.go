package app

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/podreload/podreload/internal/redact"
)

// quoted matches what url.Parse's errors quote of the URL (%q): a piece
// of a password that holds a "/", for one (http://user:pa/ss@host gives
// `invalid port ":pa" after host`).
var quoted = regexp.MustCompile(` ?"(?:[^"\\]|\\.)*"`)

// ParseURL parses raw, the value of the URL flag named flag, as an http
// or https URL with a host. Its errors never show the password, the query
// or the fragment (redact.URL): a URL that does not parse is not
// shown at all, nor any piece of it the parser's reason quotes.
func ParseURL(flag, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		reason := err.Error()
		var ue *url.Error
		if errors.As(err, &ue) {
			reason = ue.Err.Error()
		}
		reason = strings.TrimSpace(quoted.ReplaceAllString(reason, ""))
		return nil, fmt.Errorf("--%s (not shown, it may hold a secret): %s", flag, reason)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--%s %q: want an http or https URL with a host", flag, redact.URL(u))
	}
	return u, nil
}

// URLValue is a kingpin flag value (SetValue) checked with ParseURL. An
// empty value is no URL: it sets nothing.
type URLValue struct {
	// Flag is the flag's name, for errors.
	Flag string
	// URL, when set, receives the URL.
	URL **url.URL
	// Raw, when set, receives the value as given, once it parsed.
	Raw *string
}

// Set parses s.
func (v URLValue) Set(s string) error {
	var u *url.URL
	if s != "" {
		var err error
		if u, err = ParseURL(v.Flag, s); err != nil {
			return err
		}
	}
	if v.URL != nil {
		*v.URL = u
	}
	if v.Raw != nil {
		*v.Raw = s
	}
	return nil
}

// String returns the URL, redacted.
func (v URLValue) String() string {
	switch {
	case v.URL != nil && *v.URL != nil:
		return redact.URL(*v.URL)
	case v.Raw != nil && *v.Raw != "":
		if u, err := url.Parse(*v.Raw); err == nil {
			return redact.URL(u)
		}
	}
	return ""
}
