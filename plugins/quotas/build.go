package quotas

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/internal/quotanames"
)

// value is a hard limit and where it came from, for error messages: the
// label key and value that set it, or none for the config's hard.
type value struct {
	q          resource.Quantity
	label, raw string
}

// source names where name's value v came from; it is formatted only for
// an error, not on every pass.
func (v value) source(name corev1.ResourceName) string {
	if v.label == "" {
		return fmt.Sprintf("hard[%s]", name)
	}
	return fmt.Sprintf("label %s=%q", v.label, v.raw)
}

type sourced map[corev1.ResourceName]value

// Hard returns the hard limits for p: the config's, with the Profile's label
// overrides on top, checked against the caps and for requests above limits.
// Any problem is a terminal InvalidLabel or InvalidSpec error naming the label
// or field and its value.
func Hard(cfg *Config, p *kubeflowv1.Profile) (corev1.ResourceList, error) {
	hard := make(sourced, len(cfg.Hard))
	for name, q := range cfg.Hard {
		hard[name] = value{q: q}
	}
	var errs []error
	if cfg.LabelPrefix != "" {
		prefix := cfg.LabelPrefix + "/"
		var keys []string
		for key := range p.Labels {
			if strings.HasPrefix(key, prefix) {
				keys = append(keys, key)
			}
		}
		slices.Sort(keys)
		for _, key := range keys {
			name := strings.TrimPrefix(key, prefix)
			raw := p.Labels[key]
			q, err := resource.ParseQuantity(raw)
			if err != nil {
				errs = append(errs, fmt.Errorf("label %s=%q: not a quantity", key, raw))
				continue
			}
			res := corev1.ResourceName(name)
			if alias, ok := cfg.Aliases[name]; ok {
				res = alias
			}
			if why := quotanames.Check(res); why != "" {
				errs = append(errs, fmt.Errorf("label %s=%q: %s: %s", key, raw, res, why))
				continue
			}
			hard[res] = value{q: q, label: key, raw: raw}
		}
	}
	errs = append(errs, check(hard, cfg.Caps)...)
	if len(errs) > 0 {
		return nil, plugins.Terminal(plugins.ReasonInvalidLabel, errors.Join(errs...))
	}
	out := make(corev1.ResourceList, len(hard))
	for name, v := range hard {
		out[name] = v.q
	}
	return out, nil
}

// check returns one error per negative value, per value above its cap, and
// per request above its limit.
func check(hard sourced, caps corev1.ResourceList) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(hard)) {
		v := hard[name]
		if v.q.Sign() < 0 {
			errs = append(errs, fmt.Errorf("%s: %s is negative", v.source(name), name))
		}
		if why := quotanames.CheckValue(name, v.q); why != "" {
			errs = append(errs, fmt.Errorf("%s: %s", v.source(name), why))
		}
		if limit, ok := caps[name]; ok && v.q.Cmp(limit) > 0 {
			errs = append(errs, fmt.Errorf("%s: %s %s is above the cap %s", v.source(name), name, v.q.String(), limit.String()))
		}
		limitName, isRequest := limitOf(name)
		if !isRequest {
			continue
		}
		if l, ok := hard[limitName]; ok && v.q.Cmp(l.q) > 0 {
			errs = append(errs, fmt.Errorf("%s: %s %s is above %s %s (%s)", v.source(name), name, v.q.String(), limitName, l.q.String(), l.source(limitName)))
		}
	}
	return errs
}

// limitOf returns the limit that bounds a request: requests.cpu and cpu are
// bounded by limits.cpu.
func limitOf(name corev1.ResourceName) (corev1.ResourceName, bool) {
	s := string(name)
	if r, ok := strings.CutPrefix(s, "requests."); ok {
		return corev1.ResourceName("limits." + r), true
	}
	if name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage {
		return corev1.ResourceName("limits." + s), true
	}
	return "", false
}

// Build returns the ResourceQuota for p, or nil when there are no limits.
func Build(cfg *Config, p *kubeflowv1.Profile) (*corev1ac.ResourceQuotaApplyConfiguration, error) {
	hard, err := Hard(cfg, p)
	if err != nil || len(hard) == 0 {
		return nil, err
	}
	return corev1ac.ResourceQuota(cfg.Name, plugins.Namespace(p)).
		WithSpec(corev1ac.ResourceQuotaSpec().WithHard(hard)), nil
}
