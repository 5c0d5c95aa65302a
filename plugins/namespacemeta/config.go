package namespacemeta

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Kind is the plugin's name in spec.plugins and in the host configuration.
const Kind = "namespacemeta"

// Config is the namespacemeta plugin's configuration. A Profile sets Labels
// and Annotations; the host's defaults may set them for every Profile too.
// Allow and NamespaceLabelsPath are the host's.
type Config struct {
	// Labels are the labels the Profile's namespace gets, by key.
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are the annotations the Profile's namespace gets, by key.
	Annotations map[string]string `json:"annotations,omitempty"`
	// Allow lists the keys a Profile may set. Empty allows none.
	Allow Allow `json:"allow,omitzero" profilekit:"hostonly"`
	// NamespaceLabelsPath is the core plugin's namespace labels file (its
	// own namespaceLabelsPath): its keys are the platform's, and refused
	// here. Empty means no such file.
	NamespaceLabelsPath string `json:"namespaceLabelsPath,omitempty" profilekit:"hostonly"`
}

// Allow is the host's allowlist: which label and annotation keys a Profile
// may set on its namespace, and which values.
type Allow struct {
	// Labels are the label keys a Profile may set.
	Labels []Rule `json:"labels,omitempty"`
	// Annotations are the annotation keys a Profile may set.
	Annotations []Rule `json:"annotations,omitempty"`
}

// Rule allows one key, or every key of one prefix, with the values a
// pattern admits.
type Rule struct {
	// Key is a key (istio.io/rev) or <prefix>/* for every key of that
	// prefix (example.org/*, not its subdomains).
	Key string `json:"key"`
	// Values, when set, is an RE2 pattern that the whole value must match
	// (^ and $ are implied). Empty allows any value.
	Values string `json:"values,omitempty"`
}

// NewConfig returns a Config holding the built-in defaults: nothing is
// allowed until the host lists it.
func NewConfig() *Config { return &Config{} }

// Validate checks the allowlist: each key is a valid key or <prefix>/*,
// listed once, not reserved (see Build), and each pattern compiles.
func (c *Config) Validate() error {
	var errs []error
	errs = append(errs, validateRules("allow.labels", label, c.Allow.Labels)...)
	errs = append(errs, validateRules("allow.annotations", annotation, c.Allow.Annotations)...)
	return errors.Join(errs...)
}

// validateRules checks one list of rules for keys of kind k.
func validateRules(field string, k keyKind, rules []Rule) []error {
	var errs []error
	seen := map[string]bool{}
	for i, r := range rules {
		at := fmt.Sprintf("%s[%d] (%s)", field, i, r.Key)
		if seen[r.Key] {
			errs = append(errs, fmt.Errorf("%s: listed more than once", at))
		}
		seen[r.Key] = true
		if prefix, ok := strings.CutSuffix(r.Key, "/*"); ok {
			if msgs := validation.IsDNS1123Subdomain(prefix); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s: prefix %q: %s", at, prefix, strings.Join(msgs, "; ")))
			} else if why := reservedPrefix(prefix); why != "" {
				errs = append(errs, fmt.Errorf("%s: %s, never allowed", at, why))
			}
		} else if why := k.invalidKey(r.Key); why != "" {
			errs = append(errs, fmt.Errorf("%s: %s", at, why))
		} else if why := k.reserved(r.Key, nil); why != "" {
			errs = append(errs, fmt.Errorf("%s: %s, never allowed", at, why))
		}
		if _, err := r.pattern(); err != nil {
			errs = append(errs, fmt.Errorf("%s: values: %w", at, err))
		}
	}
	return errs
}

// pattern is the rule's compiled Values, anchored; nil when it has none.
func (r Rule) pattern() (*regexp.Regexp, error) {
	if r.Values == "" {
		return nil, nil
	}
	return regexp.Compile(`^(?:` + r.Values + `)$`)
}

// matches reports whether the rule names key: exactly, or by its prefix.
func (r Rule) matches(key string) bool {
	if prefix, ok := strings.CutSuffix(r.Key, "/*"); ok {
		p, _, hasPrefix := strings.Cut(key, "/")
		return hasPrefix && p == prefix
	}
	return r.Key == key
}
