// Package redact makes URLs fit for logs, errors and metric labels. Both
// sides import it: the sidecars' engine (package reloader) and the
// controller's mains (internal/app), which link no engine.
package redact

import (
	"net/url"
	"strings"
)

// redacted replaces a secret in what URL returns, as in url.Redacted.
const redacted = "xxxxx"

// URL returns u as a string fit for logs, errors and metric labels: like
// u.Redacted(), with the password replaced by xxxxx, and also with the
// value of every query parameter (?token=xxxxx), a query part without a
// value and the fragment replaced, since reload endpoints often take a
// token there. Parameter names and empty values stay.
func URL(u *url.URL) string {
	if u == nil {
		return ""
	}
	r := *u
	if _, ok := r.User.Password(); ok {
		r.User = url.UserPassword(r.User.Username(), redacted)
	}
	if r.RawQuery != "" {
		parts := strings.Split(r.RawQuery, "&")
		for i, p := range parts {
			name, value, ok := strings.Cut(p, "=")
			switch {
			case ok && value != "":
				parts[i] = name + "=" + redacted
			case !ok && p != "":
				parts[i] = redacted
			}
		}
		r.RawQuery = strings.Join(parts, "&")
	}
	if r.Fragment != "" {
		r.Fragment, r.RawFragment = redacted, ""
	}
	return r.String()
}
