package reloader

import (
	"errors"
	"net/url"
	"strings"
)

// redacted replaces a secret in what RedactURL returns, as in url.Redacted.
const redacted = "xxxxx"

// RedactURL returns u as a string fit for logs, errors and metric labels:
// like u.Redacted(), with the password replaced by xxxxx, and also with the
// value of every query parameter (?token=xxxxx), a query part without a value
// and the fragment replaced, since reload endpoints often take a token there.
// Parameter names and empty values stay.
func RedactURL(u *url.URL) string {
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

// redactError redacts, in place, the URL of the *url.Error in err (the
// http.Client hides a password in it, but not the query), and returns err.
func redactError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			ue.URL = RedactURL(u)
		} else {
			ue.URL = "(URL not shown)"
		}
	}
	return err
}
