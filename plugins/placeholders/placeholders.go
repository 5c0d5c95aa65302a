// Package placeholders lets one configuration value serve every Profile: in
// the values a plugin documents as taking them, {{ .Namespace }},
// {{ .Profile }} and {{ .Owner }} stand for the Profile's namespace, its
// name and the name in its spec.owner; {{ .OwnerKind }} for the kind in its
// spec.owner (User or Group), and {{ .Label "example.org/team" }} for the
// value of one of its labels. Spaces inside the braces are optional, but
// for the one between Label and its key. They are plain substitutions, not
// templates: nothing else is evaluated.
//
// A plugin checks each such value when its configuration loads ([Check],
// or [CheckAmong] for values that may also hold another template
// language's braces), and fills it in for one Profile when it builds
// ([Expand] with [Of]; [Missing] names the placeholders the Profile has no
// value for).
//
// # Stability
//
// Stable under semver: [Namespace], [Profile] and [Owner]; [Values] with
// [Of]; [Check], [Uses] and [Expand].
//
// Experimental, and free to change in a minor release: [OwnerKind] and
// [Label], [CheckAmong] and [Missing].
package placeholders

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// The names of the placeholders, as Check takes them.
const (
	// Namespace stands for the Profile's namespace.
	Namespace = "Namespace"
	// Profile stands for the Profile's name.
	Profile = "Profile"
	// Owner stands for the name in the Profile's spec.owner.
	Owner = "Owner"
	// OwnerKind stands for the kind in the Profile's spec.owner: User or
	// Group.
	OwnerKind = "OwnerKind"
	// Label, written {{ .Label "key" }}, stands for the value of the
	// Profile's label key.
	Label = "Label"
)

// placeholderRE matches a placeholder: a name and, for Label, a quoted key.
var placeholderRE = regexp.MustCompile(`\{\{\s*\.([A-Za-z]+)(?:\s+"([^"{}]*)")?\s*\}\}`)

// Values are what the placeholders stand for, for one Profile.
type Values struct {
	Namespace string
	Profile   string
	Owner     string
	OwnerKind string
	// Labels are the Profile's labels, read by {{ .Label "key" }}.
	Labels map[string]string
}

// Of returns the placeholder values of p.
func Of(p *kubeflowv1.Profile) Values {
	return Values{Namespace: plugins.Namespace(p), Profile: p.Name, Owner: p.Spec.Owner.Name, OwnerKind: p.Spec.Owner.Kind, Labels: p.Labels}
}

// Check fails when s holds a placeholder not among names, or any
// brace that is not part of a placeholder, so that a typo (or another
// placeholder syntax) is found when the configuration loads rather than
// written into an object.
func Check(s string, names ...string) error {
	rest, err := check(s, names)
	if err != nil {
		return err
	}
	if strings.ContainsAny(rest, "{}") {
		return fmt.Errorf("%q: braces outside a placeholder such as {{ .Namespace }}", s)
	}
	return nil
}

// CheckAmong is Check for values that may also hold another template
// language, such as a PrometheusRule's {{ $labels.pod }}: it fails only on
// a placeholder-shaped {{ .Name }} whose name is not among names (a typo),
// and leaves every other brace alone, to be written as it is.
func CheckAmong(s string, names ...string) error {
	_, err := check(s, names)
	return err
}

// check returns s without its placeholders, or an error naming those that
// are not among names or are malformed.
func check(s string, names []string) (string, error) {
	var bad []string
	rest := placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := placeholderRE.FindStringSubmatch(m)
		name, hasKey, key := sub[1], strings.Contains(m, `"`), sub[2]
		switch {
		case !slices.Contains(names, name):
			bad = append(bad, fmt.Sprintf("unknown placeholder %s", m))
		case name == Label && !hasKey:
			bad = append(bad, fmt.Sprintf("%s needs a label key: {{ .Label \"example.org/team\" }}", m))
		case name == Label:
			if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
				bad = append(bad, fmt.Sprintf("%s: label key %q: %s", m, key, strings.Join(msgs, "; ")))
			}
		case hasKey:
			bad = append(bad, fmt.Sprintf("%s: only {{ .Label \"key\" }} takes a key", m))
		}
		return ""
	})
	if len(bad) > 0 {
		known := make([]string, len(names))
		for i, n := range names {
			known[i] = "{{ ." + n + " }}"
			if n == Label {
				known[i] = `{{ .Label "key" }}`
			}
		}
		return "", fmt.Errorf("%q: %s, want one of %s", s, strings.Join(bad, ", "), strings.Join(known, ", "))
	}
	return rest, nil
}

// Uses reports whether s holds the placeholder name.
func Uses(s, name string) bool {
	for _, m := range placeholderRE.FindAllStringSubmatch(s, -1) {
		if m[1] == name {
			return true
		}
	}
	return false
}

// Missing returns the placeholders in s that v has no value for, as
// written in s: {{ .Owner }} and {{ .OwnerKind }} of a Profile without an
// owner, {{ .Label "key" }} of a label the Profile does not carry.
func Missing(s string, v Values) []string {
	var out []string
	for _, m := range placeholderRE.FindAllStringSubmatch(s, -1) {
		missing := false
		switch m[1] {
		case Owner:
			missing = v.Owner == ""
		case OwnerKind:
			missing = v.OwnerKind == ""
		case Label:
			_, ok := v.Labels[m[2]]
			missing = !ok
		}
		if missing && !slices.Contains(out, m[0]) {
			out = append(out, m[0])
		}
	}
	return out
}

// Expand replaces the placeholders in s with v. Unknown placeholders are
// left as they are; Check refuses them beforehand.
func Expand(s string, v Values) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	return placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := placeholderRE.FindStringSubmatch(m)
		switch sub[1] {
		case Namespace:
			return v.Namespace
		case Profile:
			return v.Profile
		case Owner:
			return v.Owner
		case OwnerKind:
			return v.OwnerKind
		case Label:
			if strings.Contains(m, `"`) {
				return v.Labels[sub[2]]
			}
		}
		return m
	})
}
