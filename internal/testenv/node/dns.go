package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/internal/testenv/toolbin"
)

const (
	// ClusterDomain is the cluster's DNS domain: a Service is
	// <svc>.<namespace>.svc.ClusterDomain, a StatefulSet's pod
	// <pod>.<governing Service>.<namespace>.svc.ClusterDomain.
	ClusterDomain = "cluster.local"
	// DNSServiceIP is the cluster DNS Service's address (kube-system/kube-dns,
	// as kubeadm names it), the kubelet's clusterDNS.
	DNSServiceIP = "10.96.0.10"
	// dnsUser is CoreDNS' identity (a static token) and dnsRole its
	// ClusterRole and ClusterRoleBinding.
	dnsUser, dnsRole = "system:podreload-node:coredns", "podreload-node:coredns"
	// dnsReadyAddress serves CoreDNS' ready plugin: 200 once the
	// kubernetes plugin has synced with the API server.
	dnsReadyAddress = nodeIP + ":8181"
)

// corefile is CoreDNS' configuration: the kubernetes plugin answers for
// the cluster's domain and the reverse zones on the node's address, port
// 53, from the API server; with no way out of the node nothing is
// forwarded: CoreDNS refuses every other name. TTL and cache are short (5
// s): a new StatefulSet pod's name resolves as soon as it has an address.
func corefile(dir string) string {
	return ClusterDomain + `:53 in-addr.arpa:53 ip6.arpa:53 {
    bind ` + nodeIP + `
    ready ` + dnsReadyAddress + `
    errors
    cache 5
    kubernetes ` + ClusterDomain + ` in-addr.arpa ip6.arpa {
        kubeconfig ` + dir + `/etc/coredns.kubeconfig
        pods insecure
        ttl 5
    }
}
`
}

// startDNS runs the cluster DNS: CoreDNS (bin/coredns, `make bin/coredns`)
// as a component of the node, in its network namespace, reached by the
// pods through the Service kube-system/kube-dns at DNSServiceIP, a Service
// without selector whose EndpointSlice names the node's address. CoreDNS
// starts once the API server grants its permissions (before, its first
// lists were denied, and logged "forbidden"); startDNS returns once it is
// ready.
func (n *Node) startDNS(ctx context.Context) error {
	if _, err := toolbin.Path("coredns"); err != nil {
		return fmt.Errorf("%w; `make node-bins` builds it", err)
	}
	var api *component
	for _, c := range n.components {
		if c.name == "kube-apiserver" {
			api = c
		}
	}
	if api == nil {
		return errors.New("the cluster DNS needs the API server, which is not running")
	}
	// kube-system may not exist yet right after the API server is ready.
	if err := n.waitFor(ctx, api, "namespace kube-system", func(ctx context.Context) error {
		_, err := n.client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := n.waitFor(ctx, api, "the cluster DNS' objects", n.dnsObjects); err != nil {
		return err
	}
	if err := n.waitFor(ctx, api, "CoreDNS' permissions in force", n.dnsAllowed); err != nil {
		return err
	}
	c, err := n.start("coredns", "-conf", n.path("etc", "Corefile"))
	if err != nil {
		return err
	}
	return n.waitFor(ctx, c, "CoreDNS ready", func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+dnsReadyAddress+"/ready", nil)
		if err != nil {
			return err
		}
		resp, err := (&http.Client{Timeout: time.Second}).Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /ready: %s: %s", resp.Status, b)
		}
		return nil
	})
}

// dnsObjects creates what CoreDNS and the pods need from the API server:
// CoreDNS' permissions, the Service kube-system/kube-dns and its
// EndpointSlice. Each is looked up first: a second create of the Service
// fails on its address, not with AlreadyExists.
func (n *Node) dnsObjects(ctx context.Context) error {
	role, binding, svc, slice := dnsManifests()
	rbac, core, discovery := n.client.RbacV1(), n.client.CoreV1(), n.client.DiscoveryV1()
	steps := []struct {
		what        string
		get, create func() error
	}{
		{"ClusterRole " + role.Name, func() error {
			_, err := rbac.ClusterRoles().Get(ctx, role.Name, metav1.GetOptions{})
			return err
		}, func() error {
			_, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
			return err
		}},
		{"ClusterRoleBinding " + binding.Name, func() error {
			_, err := rbac.ClusterRoleBindings().Get(ctx, binding.Name, metav1.GetOptions{})
			return err
		}, func() error {
			_, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
			return err
		}},
		{"Service kube-system/" + svc.Name, func() error {
			_, err := core.Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
			return err
		}, func() error {
			_, err := core.Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
			return err
		}},
		{"EndpointSlice kube-system/" + slice.Name, func() error {
			_, err := discovery.EndpointSlices(slice.Namespace).Get(ctx, slice.Name, metav1.GetOptions{})
			return err
		}, func() error {
			_, err := discovery.EndpointSlices(slice.Namespace).Create(ctx, slice, metav1.CreateOptions{})
			return err
		}},
	}
	for _, s := range steps {
		err := s.get()
		if apierrors.IsNotFound(err) {
			err = s.create()
		}
		if err != nil {
			return fmt.Errorf("create %s: %w", s.what, err)
		}
	}
	return nil
}

// dnsAllowed returns nil once the API server's authorizer lets dnsUser do
// everything its ClusterRole grants: the RBAC authorizer learns of a new
// binding through its informers, a moment after the create.
func (n *Node) dnsAllowed(ctx context.Context) error {
	role, _, _, _ := dnsManifests()
	for _, r := range role.Rules {
		for _, group := range r.APIGroups {
			for _, resource := range r.Resources {
				for _, verb := range r.Verbs {
					review, err := n.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
						Spec: authorizationv1.SubjectAccessReviewSpec{
							User:               dnsUser,
							ResourceAttributes: &authorizationv1.ResourceAttributes{Group: group, Resource: resource, Verb: verb},
						},
					}, metav1.CreateOptions{})
					if err != nil {
						return err
					}
					if !review.Status.Allowed {
						return fmt.Errorf("%s may not %s %s.%s yet: %s", dnsUser, verb, resource, group, review.Status.Reason)
					}
				}
			}
		}
	}
	return nil
}

// dnsManifests returns CoreDNS' ClusterRole (the permissions of the
// kubernetes plugin's documentation: list and watch Services,
// EndpointSlices, Namespaces and Pods) and its binding to dnsUser, the
// Service kube-system/kube-dns at DNSServiceIP, without selector, and its
// EndpointSlice: CoreDNS on the node's address.
func dnsManifests() (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *corev1.Service, *discoveryv1.EndpointSlice) {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: dnsRole},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services", "namespaces", "pods"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: dnsRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: dnsRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: dnsUser}},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "kube-dns", Labels: map[string]string{"k8s-app": "kube-dns"}},
		Spec: corev1.ServiceSpec{
			ClusterIP: DNSServiceIP,
			Ports: []corev1.ServicePort{
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53},
				{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53},
			},
		},
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "kube-dns-node", Labels: map[string]string{
			discoveryv1.LabelServiceName: svc.Name,
			discoveryv1.LabelManagedBy:   "podreload-testenv-node",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{nodeIP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			NodeName:   ptr.To(Name),
		}},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("dns"), Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To[int32](53)},
			{Name: ptr.To("dns-tcp"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](53)},
		},
	}
	return role, binding, svc, slice
}
