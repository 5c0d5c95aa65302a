package quotas

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/internal/quotanames"
)

// Kind is the plugin's name in spec.plugins.
const Kind = "quotas"

// Config is the quotas plugin's configuration. A Profile may set Hard; the
// other fields are the host's.
type Config struct {
	// Name of the ResourceQuota. Default profilekit-quota.
	Name string `json:"name,omitempty" profilekit:"hostonly"`
	// Hard limits of the quota, by resource name.
	Hard corev1.ResourceList `json:"hard,omitempty"`
	// LabelPrefix is the prefix of the Profile labels that override hard
	// limits: <labelPrefix>/<resource or alias>. Empty turns labels off.
	// Default quotas.profilekit.dev.
	LabelPrefix string `json:"labelPrefix,omitempty" profilekit:"hostonly"`
	// Aliases maps a short label name to the resource it stands for, for
	// resource names that cannot be part of a label key.
	// Default {gpu: requests.nvidia.com/gpu}.
	Aliases map[string]corev1.ResourceName `json:"aliases,omitempty" profilekit:"hostonly"`
	// Caps bound every hard limit, whichever source set it.
	Caps corev1.ResourceList `json:"caps,omitempty" profilekit:"hostonly"`
}

// DefaultName is the ResourceQuota's name unless the host sets another.
const DefaultName = "profilekit-quota"

// NewConfig returns a Config holding the built-in defaults.
func NewConfig() *Config {
	return &Config{
		Name:        DefaultName,
		LabelPrefix: "quotas.profilekit.dev",
		Aliases:     map[string]corev1.ResourceName{"gpu": "requests.nvidia.com/gpu"},
	}
}

// Validate checks the names, the caps and the hard limits.
func (c *Config) Validate() error {
	var errs []error
	errs = append(errs, plugins.CheckObjectName(c.Name))
	if c.LabelPrefix != "" {
		if msgs := validation.IsDNS1123Subdomain(c.LabelPrefix); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("labelPrefix %q: %s", c.LabelPrefix, strings.Join(msgs, "; ")))
		}
	}
	for _, alias := range slices.Sorted(maps.Keys(c.Aliases)) {
		if msgs := validation.IsQualifiedName(alias); len(msgs) > 0 || strings.Contains(alias, "/") {
			errs = append(errs, fmt.Errorf("aliases[%s]: not usable as the name part of a label key", alias))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Caps)) {
		if q := c.Caps[name]; q.Sign() < 0 {
			errs = append(errs, fmt.Errorf("caps[%s]=%s is negative", name, q.String()))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Caps)) {
		if why := quotanames.Check(name); why != "" {
			errs = append(errs, fmt.Errorf("caps[%s]: %s", name, why))
		}
	}
	// A name the API server refuses is reported here, before any request:
	// otherwise a spec with thousands of them becomes one huge apply that
	// the API server refuses slowly.
	hard := make(sourced, len(c.Hard))
	for _, name := range slices.Sorted(maps.Keys(c.Hard)) {
		if why := quotanames.Check(name); why != "" {
			errs = append(errs, fmt.Errorf("hard[%s]: %s", name, why))
			continue
		}
		hard[name] = value{q: c.Hard[name]}
	}
	errs = append(errs, check(hard, c.Caps)...)
	return errors.Join(errs...)
}
