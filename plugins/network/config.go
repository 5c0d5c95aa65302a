package network

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilekit/profilekit/plugins"
)

// Kind is the plugin's name in spec.plugins.
const Kind = "network"

// Config is the network plugin's configuration. The policies are the host's;
// a Profile may only turn gated policies on or off through Gates, so that a
// tenant can never widen its own network access beyond what the host offers.
type Config struct {
	// Preset names a shipped preset (see Presets) whose policies every
	// Profile gets before Policies. Empty means none: no preset is ever on
	// unless the host names it.
	Preset string `json:"preset,omitempty" profilekit:"hostonly"`
	// Exclude names policies of the preset that Profiles do not get.
	Exclude []string `json:"exclude,omitempty" profilekit:"hostonly"`
	// Policies are the NetworkPolicies every Profile gets, each one unless
	// its gate is off. One with the name of a preset's policy replaces it
	// (see Effective).
	Policies []Policy `json:"policies,omitempty" profilekit:"hostonly"`
	// Gates sets the spec gates of gated policies: gate name -> true or false
	// (a boolean or a string). A value that does not parse as true keeps the
	// policy off. The host's defaults may set gates for every Profile; a
	// Profile's entry overrides them key by key.
	Gates map[string]GateValue `json:"gates,omitempty"`
}

// Policy is one NetworkPolicy, in the shape of a NetworkPolicy's spec plus a
// name and a gate. In selector values, {{ .Namespace }} and {{ .Profile }}
// stand for the Profile's namespace and name.
type Policy struct {
	// Name of the NetworkPolicy in the Profile's namespace.
	Name string `json:"name"`
	// Gate, when set, makes the policy depend on a Profile label or a spec
	// gate. Without one the policy is always on.
	Gate *Gate `json:"gate,omitempty"`
	// PodSelector selects the pods of the namespace the policy applies to;
	// {} selects them all.
	PodSelector metav1.LabelSelector `json:"podSelector"`
	// PolicyTypes must be given: Ingress, Egress or both. It is always
	// written, so that a policy without egress rules denies egress only when
	// it says so.
	PolicyTypes []networkingv1.PolicyType `json:"policyTypes"`
	// Ingress rules; [{}] allows all ingress, none denies it.
	Ingress []networkingv1.NetworkPolicyIngressRule `json:"ingress,omitempty"`
	// Egress rules; [{}] allows all egress, none denies it.
	Egress []networkingv1.NetworkPolicyEgressRule `json:"egress,omitempty"`
}

// Gate names what turns a policy on. Exactly one of Label and Spec is set.
// The policy is on when the value parses as true (true, 1, t, TRUE, ...);
// missing means off, and any value that is not a boolean means off and is
// reported in the NetworkReady condition.
type Gate struct {
	// Label is a Profile label key.
	Label string `json:"label,omitempty"`
	// Spec is a key of Config.Gates, which the Profile sets in its
	// spec.plugins entry.
	Spec string `json:"spec,omitempty"`
}

// GateValue is the value of a spec gate: a JSON boolean or string. Strings
// are kept as written so that a value that is not a boolean can be reported.
type GateValue string

// UnmarshalJSON accepts true, false or a string.
func (v *GateValue) UnmarshalJSON(b []byte) error {
	var flag bool
	if err := json.Unmarshal(b, &flag); err == nil {
		*v = GateValue(fmt.Sprint(flag))
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("gate value %s: want a boolean or a string", b)
	}
	*v = GateValue(s)
	return nil
}

// NewConfig returns a Config with no policies: which policies a cluster needs
// is the host's decision (see Preset for starting points).
func NewConfig() *Config { return &Config{} }

// Validate checks the preset and its exclusions, then every policy a
// Profile may get (see Effective): its selectors, peers, ports and
// placeholders; and that each spec gate the Profile sets belongs to one.
func (c *Config) Validate() error {
	if err := c.validatePreset(); err != nil {
		return err
	}
	var errs []error
	names := map[string]bool{}
	for i, p := range c.Policies {
		if names[p.Name] {
			errs = append(errs, fmt.Errorf("%s: name given twice", policyPath(i, p)))
		}
		names[p.Name] = true
	}
	policies, err := c.Effective()
	if err != nil {
		return err
	}
	specGates := map[string]bool{}
	for i, p := range policies {
		if p.Gate != nil && p.Gate.Spec != "" {
			specGates[p.Gate.Spec] = true
		}
		if err := p.validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", policyPath(i, p), err))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Gates)) {
		if !specGates[k] {
			errs = append(errs, fmt.Errorf("%s: no policy has a spec gate of that name", field.NewPath("gates").Key(k)))
		}
	}
	return errors.Join(errs...)
}

// policyPath names a policy in errors, by name when it has one.
func policyPath(i int, p Policy) *field.Path {
	if p.Name != "" {
		return field.NewPath("policies").Key(p.Name)
	}
	return field.NewPath("policies").Index(i)
}

func (p *Policy) validate() error {
	var errs []error
	errs = append(errs, plugins.CheckObjectName(p.Name))
	if p.Gate != nil {
		errs = append(errs, p.Gate.validate())
	}
	errs = append(errs, checkSelector(field.NewPath("podSelector"), &p.PodSelector))
	if len(p.PolicyTypes) == 0 {
		errs = append(errs, errors.New("policyTypes: must be given (Ingress, Egress or both)"))
	}
	for i, t := range p.PolicyTypes {
		if t != networkingv1.PolicyTypeIngress && t != networkingv1.PolicyTypeEgress {
			errs = append(errs, fmt.Errorf("%s: %q is not Ingress or Egress", field.NewPath("policyTypes").Index(i), t))
		}
		if slices.Index(p.PolicyTypes, t) != i {
			errs = append(errs, fmt.Errorf("%s: %q given twice", field.NewPath("policyTypes").Index(i), t))
		}
	}
	// Rules of a type the policy does not have would be silently ignored.
	if len(p.Ingress) > 0 && !slices.Contains(p.PolicyTypes, networkingv1.PolicyTypeIngress) {
		errs = append(errs, errors.New("ingress rules without policy type Ingress would be ignored"))
	}
	if len(p.Egress) > 0 && !slices.Contains(p.PolicyTypes, networkingv1.PolicyTypeEgress) {
		errs = append(errs, errors.New("egress rules without policy type Egress would be ignored"))
	}
	for i, r := range p.Ingress {
		errs = append(errs, checkPeers(field.NewPath("ingress").Index(i).Child("from"), r.From), checkPorts(field.NewPath("ingress").Index(i).Child("ports"), r.Ports))
	}
	for i, r := range p.Egress {
		errs = append(errs, checkPeers(field.NewPath("egress").Index(i).Child("to"), r.To), checkPorts(field.NewPath("egress").Index(i).Child("ports"), r.Ports))
	}
	return errors.Join(errs...)
}

func (g *Gate) validate() error {
	switch {
	case (g.Label == "") == (g.Spec == ""):
		return errors.New("gate: set exactly one of label and spec")
	case g.Label != "":
		if msgs := validation.IsQualifiedName(g.Label); len(msgs) > 0 {
			return fmt.Errorf("gate.label %q: %s", g.Label, strings.Join(msgs, "; "))
		}
	default:
		if msgs := validation.IsConfigMapKey(g.Spec); len(msgs) > 0 {
			return fmt.Errorf("gate.spec %q: %s", g.Spec, strings.Join(msgs, "; "))
		}
	}
	return nil
}

// checkSelector checks a selector's placeholders, then the selector as it
// would be for a Profile named like the longest namespace, so that a selector
// which could never be valid fails at load.
func checkSelector(at *field.Path, s *metav1.LabelSelector) error {
	if s == nil {
		return nil
	}
	if err := checkTemplates(at, s); err != nil {
		return err
	}
	if _, err := metav1.LabelSelectorAsSelector(expandSelector(s, sampleValues)); err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	return nil
}

func checkPeers(at *field.Path, peers []networkingv1.NetworkPolicyPeer) error {
	var errs []error
	for i, p := range peers {
		pat := at.Index(i)
		switch {
		case p.PodSelector == nil && p.NamespaceSelector == nil && p.IPBlock == nil:
			errs = append(errs, fmt.Errorf("%s: set podSelector, namespaceSelector or ipBlock", pat))
		case p.IPBlock != nil && (p.PodSelector != nil || p.NamespaceSelector != nil):
			errs = append(errs, fmt.Errorf("%s: ipBlock cannot be combined with a selector", pat))
		}
		errs = append(errs, checkSelector(pat.Child("podSelector"), p.PodSelector), checkSelector(pat.Child("namespaceSelector"), p.NamespaceSelector))
		if p.IPBlock != nil {
			errs = append(errs, checkIPBlock(pat.Child("ipBlock"), p.IPBlock))
		}
	}
	return errors.Join(errs...)
}

// checkIPBlock wants canonical prefixes (10.0.0.0/8, not 10.1.2.3/8), so that
// what is stored is what we wrote, and exceptions strictly inside the block.
func checkIPBlock(at *field.Path, b *networkingv1.IPBlock) error {
	cidr, err := canonicalPrefix(b.CIDR)
	if err != nil {
		return fmt.Errorf("%s: %w", at.Child("cidr"), err)
	}
	var errs []error
	for i, e := range b.Except {
		ex, err := canonicalPrefix(e)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", at.Child("except").Index(i), err))
		case ex.Addr().Is4() != cidr.Addr().Is4() || ex.Bits() <= cidr.Bits() || !cidr.Contains(ex.Addr()):
			errs = append(errs, fmt.Errorf("%s: %s is not strictly inside %s", at.Child("except").Index(i), e, b.CIDR))
		}
	}
	return errors.Join(errs...)
}

func canonicalPrefix(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return p, fmt.Errorf("%q is not a CIDR", s)
	}
	if p.Masked().String() != s {
		return p, fmt.Errorf("%q is not canonical, write %s", s, p.Masked())
	}
	return p, nil
}

func checkPorts(at *field.Path, ports []networkingv1.NetworkPolicyPort) error {
	var errs []error
	for i, p := range ports {
		pat := at.Index(i)
		if p.Protocol != nil && !slices.Contains([]corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}, *p.Protocol) {
			errs = append(errs, fmt.Errorf("%s: %q is not TCP, UDP or SCTP", pat.Child("protocol"), *p.Protocol))
		}
		if p.Port != nil {
			if p.Port.Type == intstr.Int {
				if msgs := validation.IsValidPortNum(p.Port.IntValue()); len(msgs) > 0 {
					errs = append(errs, fmt.Errorf("%s: %s", pat.Child("port"), strings.Join(msgs, "; ")))
				}
			} else if msgs := validation.IsValidPortName(p.Port.StrVal); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s %q: %s", pat.Child("port"), p.Port.StrVal, strings.Join(msgs, "; ")))
			}
		}
		if p.EndPort != nil {
			if p.Port == nil || p.Port.Type != intstr.Int || int(*p.EndPort) < p.Port.IntValue() || *p.EndPort > 65535 {
				errs = append(errs, fmt.Errorf("%s: needs a numeric port not above it, and at most 65535", pat.Child("endPort")))
			}
		}
	}
	return errors.Join(errs...)
}
