package reloader

import (
	"errors"
	"net/url"

	"github.com/podreload/podreload/internal/redact"
)

// RedactURL returns u as a string fit for logs, errors and metric labels
// (redact.URL): the password, the query values and the fragment replaced
// by xxxxx.
func RedactURL(u *url.URL) string { return redact.URL(u) }

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
