package limitrange

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Kind is the plugin's name in spec.plugins.
const Kind = "limitrange"

// DefaultName is the LimitRange's name unless the host sets another.
const DefaultName = "profilekit-limits"

// Config is the limitrange plugin's configuration. A Profile may set
// Container; Name is the host's.
type Config struct {
	// Name of the LimitRange. Default profilekit-limits.
	Name string `json:"name,omitempty" profilekit:"hostonly"`
	// Container holds the limits for each container.
	Container Limits `json:"container,omitempty"`
}

// Limits are the per-container values of a LimitRange item.
type Limits struct {
	// Default is the limit a container gets when it sets none.
	Default corev1.ResourceList `json:"default,omitempty"`
	// DefaultRequest is the request a container gets when it sets none.
	DefaultRequest corev1.ResourceList `json:"defaultRequest,omitempty"`
	// Min is the least a container may request.
	Min corev1.ResourceList `json:"min,omitempty"`
	// Max is the most a container may ask as a limit.
	Max corev1.ResourceList `json:"max,omitempty"`
	// MaxLimitRequestRatio bounds limit divided by request.
	MaxLimitRequestRatio corev1.ResourceList `json:"maxLimitRequestRatio,omitempty"`
}

// Empty reports whether no limit is set.
func (l Limits) Empty() bool {
	return len(l.Default) == 0 && len(l.DefaultRequest) == 0 && len(l.Min) == 0 &&
		len(l.Max) == 0 && len(l.MaxLimitRequestRatio) == 0
}

// NewConfig returns a Config holding the built-in defaults: a name and no limits.
func NewConfig() *Config {
	return &Config{Name: DefaultName}
}

// Validate checks the name and that the limits are consistent.
func (c *Config) Validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Subdomain(c.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("name %q: %s", c.Name, strings.Join(msgs, "; ")))
	}
	l := c.Container
	for _, f := range []struct {
		field string
		list  corev1.ResourceList
	}{
		{"default", l.Default}, {"defaultRequest", l.DefaultRequest}, {"min", l.Min},
		{"max", l.Max}, {"maxLimitRequestRatio", l.MaxLimitRequestRatio},
	} {
		for _, name := range slices.Sorted(maps.Keys(f.list)) {
			if q := f.list[name]; q.Sign() < 0 {
				errs = append(errs, fmt.Errorf("container.%s[%s]=%s is negative", f.field, name, q.String()))
			}
		}
	}
	errs = append(errs, notAbove("min", l.Min, "max", l.Max)...)
	errs = append(errs, notAbove("min", l.Min, "default", l.Default)...)
	errs = append(errs, notAbove("default", l.Default, "max", l.Max)...)
	errs = append(errs, notAbove("min", l.Min, "defaultRequest", l.DefaultRequest)...)
	errs = append(errs, notAbove("defaultRequest", l.DefaultRequest, "max", l.Max)...)
	errs = append(errs, notAbove("defaultRequest", l.DefaultRequest, "default", l.Default)...)
	for _, name := range slices.Sorted(maps.Keys(l.MaxLimitRequestRatio)) {
		ratio := l.MaxLimitRequestRatio[name]
		lim, okL := l.Default[name]
		req, okR := l.DefaultRequest[name]
		if !okL || !okR || req.IsZero() {
			continue
		}
		if lim.AsApproximateFloat64()/req.AsApproximateFloat64() > ratio.AsApproximateFloat64() {
			errs = append(errs, fmt.Errorf("container.default[%s]=%s over container.defaultRequest[%s]=%s exceeds container.maxLimitRequestRatio[%s]=%s",
				name, lim.String(), name, req.String(), name, ratio.String()))
		}
	}
	return errors.Join(errs...)
}

// notAbove returns an error for each resource whose value in low is above
// its value in high.
func notAbove(lowField string, low corev1.ResourceList, highField string, high corev1.ResourceList) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(low)) {
		lo := low[name]
		hi, ok := high[name]
		if ok && lo.Cmp(hi) > 0 {
			errs = append(errs, fmt.Errorf("container.%s[%s]=%s is above container.%s[%s]=%s",
				lowField, name, lo.String(), highField, name, hi.String()))
		}
	}
	return errs
}

var _ interface{ Validate() error } = (*Config)(nil)
