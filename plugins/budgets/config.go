package budgets

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/internal/quotanames"
)

// Kind is the plugin's name in spec.plugins and in the host configuration.
const Kind = "budgets"

// Config is the budgets plugin's configuration. It is the host's alone: who
// may spend what is the platform's decision, so a Profile's spec that sets
// it is refused.
type Config struct {
	// Budgets are the team budgets, each over the Profiles its selector
	// matches.
	Budgets []Budget `json:"budgets,omitempty" profilekit:"hostonly"`
}

// Budget is what a set of Profiles may spend together.
type Budget struct {
	// Name names the budget: the ResourceQuota profilekit-budget-<name> in
	// every member's namespace, and the metrics' budget label. A DNS-1123
	// label.
	Name string `json:"name"`
	// ProfileSelector picks the members. Required; {} selects every
	// Profile.
	ProfileSelector *metav1.LabelSelector `json:"profileSelector"`
	// Hard is what the members may hold together, by resource name as in a
	// ResourceQuota (requests.cpu, limits.memory, requests.nvidia.com/gpu,
	// count/pods, requests.storage).
	Hard corev1.ResourceList `json:"hard"`
	// Grant is the headroom a member that asks for more gets in one move,
	// by resource; a resource left out gets a tenth of its hard limit,
	// rounded up (to a whole number where the API server wants one).
	Grant corev1.ResourceList `json:"grant,omitempty"`
}

// QuotaPrefix starts the name of every budget's ResourceQuota.
const QuotaPrefix = "profilekit-budget-"

// QuotaName returns the name of the budget's ResourceQuota in a member's
// namespace.
func QuotaName(budget string) string { return QuotaPrefix + budget }

// NewConfig returns a Config holding the built-in defaults: no budgets.
func NewConfig() *Config { return &Config{} }

// Validate checks every budget and fills in the grants left out. Each
// problem is one line naming the budget and the field.
func (c *Config) Validate() error {
	var errs []error
	seen := map[string]bool{}
	for i := range c.Budgets {
		b := &c.Budgets[i]
		where := fmt.Sprintf("budgets[%d]", i)
		if b.Name != "" {
			where = fmt.Sprintf("budgets[%d] (%s)", i, b.Name)
		}
		if seen[b.Name] && b.Name != "" {
			errs = append(errs, fmt.Errorf("%s: name %q is used by an earlier budget", where, b.Name))
		}
		seen[b.Name] = true
		for _, err := range b.validate() {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
	}
	return errors.Join(errs...)
}

// validate returns the budget's problems, and fills in its default grants.
func (b *Budget) validate() []error {
	var errs []error
	if msgs := validation.IsDNS1123Label(b.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("name %q: %s", b.Name, strings.Join(msgs, "; ")))
	} else if err := plugins.CheckObjectName(QuotaName(b.Name)); err != nil {
		errs = append(errs, err)
	}
	if b.ProfileSelector == nil {
		errs = append(errs, errors.New("profileSelector is required (use {} for every Profile)"))
	} else if _, err := metav1.LabelSelectorAsSelector(b.ProfileSelector); err != nil {
		errs = append(errs, fmt.Errorf("profileSelector: %w", err))
	}
	if len(b.Hard) == 0 {
		errs = append(errs, errors.New("hard is empty: name at least one resource"))
	}
	for _, name := range slices.Sorted(maps.Keys(b.Hard)) {
		errs = append(errs, checkQuantity("hard", name, b.Hard[name])...)
	}
	for _, name := range slices.Sorted(maps.Keys(b.Grant)) {
		if _, ok := b.Hard[name]; !ok {
			errs = append(errs, fmt.Errorf("grant[%s]: not a resource of hard", name))
			continue
		}
		errs = append(errs, checkQuantity("grant", name, b.Grant[name])...)
		if q := b.Grant[name]; q.Sign() == 0 {
			errs = append(errs, fmt.Errorf("grant[%s]: must be more than 0, or left out for the default", name))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if b.Grant == nil {
		b.Grant = corev1.ResourceList{}
	}
	for name, hard := range b.Hard {
		if _, ok := b.Grant[name]; !ok {
			b.Grant[name] = defaultGrant(name, hard)
		}
	}
	return nil
}

// checkQuantity returns why field[name]=q cannot be a quota's hard limit.
func checkQuantity(field string, name corev1.ResourceName, q resource.Quantity) []error {
	var errs []error
	if why := quotanames.Check(name); why != "" {
		return []error{fmt.Errorf("%s[%s]: %s", field, name, why)}
	}
	if q.Sign() < 0 {
		errs = append(errs, fmt.Errorf("%s[%s]: %s is negative", field, name, q.String()))
	}
	if why := quotanames.CheckValue(name, q); why != "" {
		errs = append(errs, fmt.Errorf("%s[%s]: %s", field, name, why))
	}
	if !milli(name) && q.MilliValue()%1000 != 0 {
		errs = append(errs, fmt.Errorf("%s[%s]: %s is not a whole number of units (only CPU takes fractions)", field, name, q.String()))
	}
	return errs
}

// defaultGrant is a tenth of hard, rounded up to the resource's unit, and at
// least one unit when hard is not 0.
func defaultGrant(name corev1.ResourceName, hard resource.Quantity) resource.Quantity {
	u := toUnits(name, hard)
	return fromUnits(name, (u+9)/10, hard.Format)
}

// selector returns the budget's Profile selector; Validate has checked it.
func (b *Budget) selector() labels.Selector {
	s, err := metav1.LabelSelectorAsSelector(b.ProfileSelector)
	if err != nil {
		return labels.Nothing()
	}
	return s
}
