// Package remote renders the remote_write and remote_read sections of a
// Prometheus configuration, their auth (basic, authorization, OAuth2,
// sigv4, Azure AD) and the Alertmanagers' HTTP clients, as
// prometheus-operator's generator writes them, for the server's Prometheus
// version (Renderer). It is pure.
package remote

import (
	"github.com/podreload/podreload/controller/promcfg/credential"
	"github.com/podreload/podreload/controller/promcfg/relabeling"
)

// Renderer renders the remote write and read sections, their auth and the
// Alertmanagers' HTTP clients of one server's configuration.
type Renderer struct {
	// Cred renders credentials with the Secrets and ConfigMaps of the
	// server's namespace.
	Cred credential.Reader
	// Namespace is the server's.
	Namespace string
	// AtLeast reports whether the server's Prometheus version is at least
	// major.minor.
	AtLeast func(major, minor int) bool
	// Relabel checks the users' relabelings.
	Relabel relabeling.Checker
}
