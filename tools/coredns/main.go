// Command coredns is CoreDNS with only the plugins the real node's cluster
// DNS needs (internal/testenv/node): the kubernetes plugin answering for
// cluster.local from the API server, cache, errors, ready for the node's
// readiness check and bind to listen on the node's address. The node has
// no way out, so nothing is forwarded. `make bin/coredns` builds it; a
// build with every plugin (the cloud providers' DNS APIs, etcd, dnstap...)
// compiles several times as much.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	// The plugins of directives, each registered by its package.
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives is the order in which the plugins handle a query, that of
// CoreDNS' plugin.cfg.
func directives() []string {
	return []string{"bind", "ready", "errors", "cache", "kubernetes"}
}

func main() {
	dnsserver.Directives = directives()
	coremain.Run()
}
