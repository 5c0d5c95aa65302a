package network

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/placeholders"
)

// sampleValues checks at load that a selector is valid once expanded.
var sampleValues = placeholders.Values{Namespace: "profile", Profile: "profile"}

// checkTemplate fails on a placeholder other than {{ .Namespace }} and
// {{ .Profile }}, and on stray braces.
func checkTemplate(s string) error {
	return placeholders.Check(s, placeholders.Namespace, placeholders.Profile)
}

// checkTemplates checks the placeholders of a selector's values; keys and
// operators take none.
func checkTemplates(at *field.Path, s *metav1.LabelSelector) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(s.MatchLabels)) {
		if strings.Contains(k, "{{") {
			errs = append(errs, fmt.Errorf("%s: key %q: placeholders go in values only", at.Child("matchLabels"), k))
		}
		if err := checkTemplate(s.MatchLabels[k]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at.Child("matchLabels").Key(k), err))
		}
	}
	for i, r := range s.MatchExpressions {
		if strings.Contains(r.Key, "{{") {
			errs = append(errs, fmt.Errorf("%s: key %q: placeholders go in values only", at.Child("matchExpressions").Index(i), r.Key))
		}
		for _, v := range r.Values {
			if err := checkTemplate(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", at.Child("matchExpressions").Index(i), err))
			}
		}
	}
	return errors.Join(errs...)
}

func expandSelector(s *metav1.LabelSelector, v placeholders.Values) *metav1.LabelSelector {
	out := s.DeepCopy()
	for k, val := range out.MatchLabels {
		out.MatchLabels[k] = placeholders.Expand(val, v)
	}
	for i := range out.MatchExpressions {
		for j, val := range out.MatchExpressions[i].Values {
			out.MatchExpressions[i].Values[j] = placeholders.Expand(val, v)
		}
	}
	return out
}

// Gated is a policy left off by its gate, and why.
type Gated struct {
	// Policy is the policy's name.
	Policy string
	// Source names the gate: label <key> or gates[<name>].
	Source string
	// Value is the gate's value; empty when it is not set.
	Value string
	// Invalid is true when the value is set but is not a boolean.
	Invalid bool
}

// Desired is what a Profile gets: the policies that are on, and the gated
// ones that are off.
type Desired struct {
	Policies []*networkingv1ac.NetworkPolicyApplyConfiguration
	Off      []Gated
}

// Build returns the NetworkPolicies for p under cfg, from its effective
// policies (the preset's and the host's, see Config.Effective). A gate that
// is missing, false or not a boolean leaves its policy out (fail closed);
// the last case is listed in Off with Invalid set, for the condition. A
// selector that is invalid once the Profile's name is put in is a terminal
// InvalidSpec error; an unknown preset is a terminal InvalidConfig error.
func Build(cfg *Config, p *kubeflowv1.Profile) (Desired, error) {
	policies, err := cfg.Effective()
	if err != nil {
		return Desired{}, plugins.Terminal(plugins.ReasonInvalidConfig, err)
	}
	v := placeholders.Of(p)
	var d Desired
	var errs []error
	for _, pol := range policies {
		if pol.Gate != nil {
			if g, on := evalGate(pol.Name, pol.Gate, p, cfg.Gates); !on {
				d.Off = append(d.Off, g)
				continue
			}
		}
		np, err := buildPolicy(pol, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("policy %s: %w", pol.Name, err))
			continue
		}
		d.Policies = append(d.Policies, np)
	}
	if len(errs) > 0 {
		return Desired{}, plugins.Terminal(plugins.ReasonInvalidSpec, errors.Join(errs...))
	}
	return d, nil
}

// evalGate reports whether a gate is on, and when it is off, why.
func evalGate(policy string, g *Gate, p *kubeflowv1.Profile, gates map[string]GateValue) (Gated, bool) {
	off := Gated{Policy: policy}
	var raw string
	var set bool
	if g.Label != "" {
		off.Source = "label " + g.Label
		raw, set = p.Labels[g.Label]
	} else {
		off.Source = field.NewPath("gates").Key(g.Spec).String()
		var gv GateValue
		gv, set = gates[g.Spec]
		raw = string(gv)
	}
	off.Value = raw
	if !set {
		return off, false
	}
	on, err := strconv.ParseBool(raw)
	off.Invalid = err != nil
	return off, on && err == nil
}

// Reason is the condition reason of an invalid gate: InvalidLabel for a
// label gate, InvalidSpec for a spec gate.
func (g Gated) Reason() string {
	if strings.HasPrefix(g.Source, "label ") {
		return plugins.ReasonInvalidLabel
	}
	return plugins.ReasonInvalidSpec
}

// Message describes an invalid gate for the condition.
func (g Gated) Message() string {
	return fmt.Sprintf("%s=%q is not true or false, so policy %s stays off", g.Source, g.Value, g.Policy)
}

func buildPolicy(pol Policy, v placeholders.Values) (*networkingv1ac.NetworkPolicyApplyConfiguration, error) {
	pods, err := selector(&pol.PodSelector, v)
	if err != nil {
		return nil, fmt.Errorf("podSelector: %w", err)
	}
	spec := networkingv1ac.NetworkPolicySpec().WithPodSelector(pods).WithPolicyTypes(pol.PolicyTypes...)
	var errs []error
	for i, r := range pol.Ingress {
		rule := networkingv1ac.NetworkPolicyIngressRule().WithPorts(ports(r.Ports)...)
		for j, peer := range r.From {
			pa, err := peerOf(peer, v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", field.NewPath("ingress").Index(i).Child("from").Index(j), err))
				continue
			}
			rule.WithFrom(pa)
		}
		spec.WithIngress(rule)
	}
	for i, r := range pol.Egress {
		rule := networkingv1ac.NetworkPolicyEgressRule().WithPorts(ports(r.Ports)...)
		for j, peer := range r.To {
			pa, err := peerOf(peer, v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", field.NewPath("egress").Index(i).Child("to").Index(j), err))
				continue
			}
			rule.WithTo(pa)
		}
		spec.WithEgress(rule)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return networkingv1ac.NetworkPolicy(pol.Name, v.Namespace).WithSpec(spec), nil
}

// selector expands a selector's placeholders and checks the result, which
// the Profile's name may have made too long for a label value.
func selector(s *metav1.LabelSelector, v placeholders.Values) (*metav1ac.LabelSelectorApplyConfiguration, error) {
	e := expandSelector(s, v)
	if _, err := metav1.LabelSelectorAsSelector(e); err != nil {
		return nil, err
	}
	out := metav1ac.LabelSelector()
	if len(e.MatchLabels) > 0 {
		out.WithMatchLabels(e.MatchLabels)
	}
	for _, r := range e.MatchExpressions {
		req := metav1ac.LabelSelectorRequirement().WithKey(r.Key).WithOperator(r.Operator)
		if len(r.Values) > 0 {
			req.WithValues(r.Values...)
		}
		out.WithMatchExpressions(req)
	}
	return out, nil
}

func peerOf(p networkingv1.NetworkPolicyPeer, v placeholders.Values) (*networkingv1ac.NetworkPolicyPeerApplyConfiguration, error) {
	out := networkingv1ac.NetworkPolicyPeer()
	if p.PodSelector != nil {
		s, err := selector(p.PodSelector, v)
		if err != nil {
			return nil, fmt.Errorf("podSelector: %w", err)
		}
		out.WithPodSelector(s)
	}
	if p.NamespaceSelector != nil {
		s, err := selector(p.NamespaceSelector, v)
		if err != nil {
			return nil, fmt.Errorf("namespaceSelector: %w", err)
		}
		out.WithNamespaceSelector(s)
	}
	if p.IPBlock != nil {
		out.WithIPBlock(networkingv1ac.IPBlock().WithCIDR(p.IPBlock.CIDR).WithExcept(p.IPBlock.Except...))
	}
	return out, nil
}

func ports(ps []networkingv1.NetworkPolicyPort) []*networkingv1ac.NetworkPolicyPortApplyConfiguration {
	out := make([]*networkingv1ac.NetworkPolicyPortApplyConfiguration, 0, len(ps))
	for _, p := range ps {
		pa := networkingv1ac.NetworkPolicyPort()
		if p.Protocol != nil {
			pa.WithProtocol(*p.Protocol)
		}
		if p.Port != nil {
			pa.WithPort(*p.Port)
		}
		if p.EndPort != nil {
			pa.WithEndPort(*p.EndPort)
		}
		out = append(out, pa)
	}
	return out
}
