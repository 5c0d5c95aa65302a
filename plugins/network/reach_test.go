package network_test

import (
	"encoding/json"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/profilekit/profilekit/plugins/network"
)

// endpoint is one end of a connection: a pod (its namespace and labels) or,
// when ip is set, an address outside the cluster.
type endpoint struct {
	namespace string
	labels    map[string]string
	ip        string
}

func podIn(namespace string, labels map[string]string) endpoint {
	return endpoint{namespace: namespace, labels: labels}
}

func address(ip string) endpoint { return endpoint{ip: ip} }

// typed turns what Build returns into NetworkPolicies, as the API server
// would store them, so that reaches reads what is written.
func typed(t *testing.T, d network.Desired) []networkingv1.NetworkPolicy {
	t.Helper()
	out := make([]networkingv1.NetworkPolicy, 0, len(d.Policies))
	for _, ac := range d.Policies {
		data, err := json.Marshal(ac)
		if err != nil {
			t.Fatal(err)
		}
		var np networkingv1.NetworkPolicy
		if err := json.Unmarshal(data, &np); err != nil {
			t.Fatal(err)
		}
		out = append(out, np)
	}
	return out
}

// reaches reports whether the policies of one namespace let a TCP
// connection from src to dst on port through, as Kubernetes defines it:
// the direction is egress when src is a pod of the namespace and ingress
// when dst is (a connection inside the namespace must pass both). A pod that
// no policy of a direction selects is open in that direction; one that some
// select is open only to what one of their rules allows. Addresses outside
// the cluster match ipBlocks only; pods match selectors only. Named ports
// are not modelled and fail the test.
func reaches(t *testing.T, policies []networkingv1.NetworkPolicy, namespace string, src, dst endpoint, port int32) bool {
	t.Helper()
	ok := true
	if src.ip == "" && src.namespace == namespace {
		ok = ok && allowed(t, policies, networkingv1.PolicyTypeEgress, src.labels, namespace, dst, port)
	}
	if dst.ip == "" && dst.namespace == namespace {
		ok = ok && allowed(t, policies, networkingv1.PolicyTypeIngress, dst.labels, namespace, src, port)
	}
	return ok
}

// allowed decides one direction for the pod with the given labels: peer is
// the other end.
func allowed(t *testing.T, policies []networkingv1.NetworkPolicy, dir networkingv1.PolicyType, pod map[string]string, namespace string, peer endpoint, port int32) bool {
	t.Helper()
	isolated := false
	for _, np := range policies {
		if !hasType(np, dir) || !matches(t, &np.Spec.PodSelector, pod) {
			continue
		}
		isolated = true
		if dir == networkingv1.PolicyTypeEgress {
			for _, r := range np.Spec.Egress {
				if peersMatch(t, r.To, namespace, peer) && portsMatch(t, r.Ports, port) {
					return true
				}
			}
			continue
		}
		for _, r := range np.Spec.Ingress {
			if peersMatch(t, r.From, namespace, peer) && portsMatch(t, r.Ports, port) {
				return true
			}
		}
	}
	return !isolated
}

func hasType(np networkingv1.NetworkPolicy, dir networkingv1.PolicyType) bool {
	for _, pt := range np.Spec.PolicyTypes {
		if pt == dir {
			return true
		}
	}
	return false
}

func matches(t *testing.T, s *metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		t.Fatalf("selector %v: %v", s, err)
	}
	return sel.Matches(labels.Set(set))
}

// peersMatch: no peers means every peer; a selector without a namespace
// selector means pods of the policy's own namespace.
func peersMatch(t *testing.T, peers []networkingv1.NetworkPolicyPeer, namespace string, peer endpoint) bool {
	t.Helper()
	if len(peers) == 0 {
		return true
	}
	for _, p := range peers {
		switch {
		case p.IPBlock != nil:
			if peer.ip != "" && inBlock(t, p.IPBlock, peer.ip) {
				return true
			}
		case peer.ip != "":
			// Selectors never match an address outside the cluster.
		case p.NamespaceSelector == nil:
			if peer.namespace == namespace && matches(t, p.PodSelector, peer.labels) {
				return true
			}
		default:
			nsLabels := map[string]string{corev1.LabelMetadataName: peer.namespace}
			if matches(t, p.NamespaceSelector, nsLabels) && (p.PodSelector == nil || matches(t, p.PodSelector, peer.labels)) {
				return true
			}
		}
	}
	return false
}

func inBlock(t *testing.T, b *networkingv1.IPBlock, ip string) bool {
	t.Helper()
	addr := netip.MustParseAddr(ip)
	if !netip.MustParsePrefix(b.CIDR).Contains(addr) {
		return false
	}
	for _, e := range b.Except {
		if netip.MustParsePrefix(e).Contains(addr) {
			return false
		}
	}
	return true
}

// portsMatch: no ports means every port; a port without a protocol is TCP.
func portsMatch(t *testing.T, ports []networkingv1.NetworkPolicyPort, port int32) bool {
	t.Helper()
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		if p.Port == nil {
			return true
		}
		if p.Port.Type == intstr.String {
			t.Fatalf("named port %q: not modelled", p.Port.StrVal)
		}
		last := p.Port.IntVal
		if p.EndPort != nil {
			last = *p.EndPort
		}
		if port >= p.Port.IntVal && port <= last {
			return true
		}
	}
	return false
}
