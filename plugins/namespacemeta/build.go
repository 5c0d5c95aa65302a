package namespacemeta

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
)

// keyKind is what a key names on the namespace: a label or an annotation.
type keyKind string

const (
	label      keyKind = "label"
	annotation keyKind = "annotation"
)

// invalidKey says why key cannot be a key of kind k, or "".
func (k keyKind) invalidKey(key string) string {
	check := key
	if k == annotation {
		// The API server checks annotation keys in lower case.
		check = strings.ToLower(key)
	}
	if msgs := validation.IsQualifiedName(check); len(msgs) > 0 {
		return fmt.Sprintf("not a valid %s key: %s", k, strings.Join(msgs, "; "))
	}
	return ""
}

// reserved says why key of kind k is never a Profile's to set, whatever the
// host allows, or "". file holds the core plugin's namespace labels.
func (k keyKind) reserved(key string, file map[string]string) string {
	if prefix, _, ok := strings.Cut(key, "/"); ok {
		if why := reservedPrefix(prefix); why != "" {
			return why
		}
	}
	switch k {
	case label:
		if _, ours := plugins.OwnershipLabels(Kind, "")[key]; ours {
			return "profilekit's ownership label"
		}
		if key == core.LabelIstioInjection {
			return "the core plugin's mesh label"
		}
		if _, listed := file[key]; listed {
			return "a key of the host's namespace labels file"
		}
	case annotation:
		if key == core.AnnotationOwner {
			return "the owner annotation that Kubeflow reads"
		}
	}
	return ""
}

// reservedPrefix says why no key of prefix is ever a Profile's to set:
// Kubernetes' own domains (not their subdomains), and profilekit's with its
// subdomains. "" when keys of prefix may be allowed.
func reservedPrefix(prefix string) string {
	switch {
	case prefix == "kubernetes.io" || prefix == "k8s.io":
		return "the " + prefix + " prefix is Kubernetes' own"
	case prefix == profilekitDomain || strings.HasSuffix(prefix, "."+profilekitDomain):
		return "the " + profilekitDomain + " domain is profilekit's own"
	}
	return ""
}

// profilekitDomain is the domain of profilekit's own keys.
const profilekitDomain = "profilekit.dev"

// Build returns the labels and annotations the Profile's namespace gets
// under cfg, or a terminal InvalidSpec error that names every key refused
// and why, one per line: a key that is reserved (see reserved; file holds
// the core plugin's namespace labels), not allowed by the host, invalid, or
// whose value the host's pattern does not admit. A refused key refuses
// them all: the namespace is then left as it is.
func Build(cfg *Config, file map[string]string) (plugins.Marks, error) {
	labels, lerrs := decide(label, cfg.Labels, cfg.Allow.Labels, file)
	annotations, aerrs := decide(annotation, cfg.Annotations, cfg.Allow.Annotations, file)
	errs := append(lerrs, aerrs...)
	if err := apivalidation.ValidateAnnotationsSize(cfg.Annotations); err != nil {
		errs = append(errs, fmt.Errorf("annotations: %w", err))
	}
	if len(errs) > 0 {
		return plugins.Marks{}, plugins.Terminal(plugins.ReasonInvalidSpec,
			fmt.Errorf("refused, the namespace is left as it is: %w", errors.Join(errs...)))
	}
	return plugins.Marks{Labels: labels, Annotations: annotations}, nil
}

// decide checks every key of want, of kind k, against rules; it returns
// what it allows and one error per key it refuses, in key order.
func decide(k keyKind, want map[string]string, rules []Rule, file map[string]string) (map[string]string, []error) {
	if len(want) == 0 {
		return nil, nil
	}
	var errs []error
	out := make(map[string]string, len(want))
	for _, key := range slices.Sorted(maps.Keys(want)) {
		value := want[key]
		if why := refusal(k, key, value, rules, file); why != "" {
			errs = append(errs, fmt.Errorf("%ss[%s]: %s", k, key, why))
			continue
		}
		out[key] = value
	}
	return out, errs
}

// refusal says why key=value, of kind k, is refused, or "".
func refusal(k keyKind, key, value string, rules []Rule, file map[string]string) string {
	if why := k.invalidKey(key); why != "" {
		return why
	}
	if why := k.reserved(key, file); why != "" {
		return why + ", never allowed"
	}
	rule, ok := ruleFor(key, rules)
	if !ok {
		return fmt.Sprintf("not allowed by the host (allow.%ss)", k)
	}
	if k == label {
		if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
			return fmt.Sprintf("value %q: %s", value, strings.Join(msgs, "; "))
		}
	}
	re, err := rule.pattern()
	if err != nil {
		// Validate refused it already; refuse the key all the same.
		return fmt.Sprintf("the host's pattern for %s does not compile: %v", rule.Key, err)
	}
	if re != nil && !re.MatchString(value) {
		return fmt.Sprintf("value %q is not allowed: the host allows %s only for %s", value, rule.Values, rule.Key)
	}
	return ""
}

// ruleFor returns the rule that governs key: the one that names it exactly,
// else the one of its prefix.
func ruleFor(key string, rules []Rule) (Rule, bool) {
	var byPrefix *Rule
	for i, r := range rules {
		if r.Key == key {
			return r, true
		}
		if byPrefix == nil && r.matches(key) {
			byPrefix = &rules[i]
		}
	}
	if byPrefix == nil {
		return Rule{}, false
	}
	return *byPrefix, true
}
