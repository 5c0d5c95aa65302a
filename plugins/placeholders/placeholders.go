// Package placeholders lets one configuration value serve every Profile: in
// the values a plugin documents as taking them, {{ .Namespace }},
// {{ .Profile }} and {{ .Owner }} stand for the Profile's namespace, its
// name and the name in its spec.owner. Spaces inside the braces are
// optional. They are plain substitutions, not templates: nothing else is
// evaluated.
//
// A plugin checks each such value when its configuration loads ([Check]),
// and fills it in for one Profile when it builds ([Expand] with [Of]).
//
// # Stability
//
// Stable under semver: [Namespace], [Profile] and [Owner]; [Values] with
// [Of]; [Check], [Uses] and [Expand].
//
// Experimental, and free to change in a minor release: nothing.
package placeholders

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

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
)

var placeholderRE = regexp.MustCompile(`\{\{\s*\.([A-Za-z]+)\s*\}\}`)

// Values are what the placeholders stand for, for one Profile.
type Values struct {
	Namespace string
	Profile   string
	Owner     string
}

// Of returns the placeholder values of p.
func Of(p *kubeflowv1.Profile) Values {
	return Values{Namespace: plugins.Namespace(p), Profile: p.Name, Owner: p.Spec.Owner.Name}
}

// Check fails when s holds a placeholder not among names, or any
// brace that is not part of a placeholder, so that a typo (or another
// placeholder syntax) is found when the configuration loads rather than
// written into an object.
func Check(s string, names ...string) error {
	var bad []string
	rest := placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		if !slices.Contains(names, placeholderRE.FindStringSubmatch(m)[1]) {
			bad = append(bad, m)
		}
		return ""
	})
	if len(bad) > 0 {
		known := make([]string, len(names))
		for i, n := range names {
			known[i] = "{{ ." + n + " }}"
		}
		return fmt.Errorf("%q: unknown placeholder %s, want one of %s", s, strings.Join(bad, ", "), strings.Join(known, ", "))
	}
	if strings.ContainsAny(rest, "{}") {
		return fmt.Errorf("%q: braces outside a placeholder such as {{ .Namespace }}", s)
	}
	return nil
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

// Expand replaces the placeholders in s with v. Unknown placeholders are
// left as they are; Check refuses them beforehand.
func Expand(s string, v Values) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	return placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		switch placeholderRE.FindStringSubmatch(m)[1] {
		case Namespace:
			return v.Namespace
		case Profile:
			return v.Profile
		case Owner:
			return v.Owner
		}
		return m
	})
}
