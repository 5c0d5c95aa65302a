package volumes

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// Kind is the plugin's name in spec.plugins.
const Kind = "volumes"

// Match says which retained volumes a returning Profile gets back.
type Match string

const (
	// MatchProfile gives a Profile the volumes retained from a Profile of
	// the same name and the same owner. The default.
	MatchProfile Match = "Profile"
	// MatchOwner gives a Profile the volumes retained from any Profile of the
	// same owner, for platforms that rename Profiles.
	MatchOwner Match = "Owner"
)

// Template is a kind of volume the host offers.
type Template struct {
	// Name identifies the template; Profiles choose templates by it, and it
	// is the claim's name unless ClaimName is set.
	Name string `json:"name"`
	// ClaimName is the PersistentVolumeClaim's name. Default Name.
	ClaimName string `json:"claimName,omitempty"`
	// StorageClassName is the claim's StorageClass. Empty means the cluster's
	// default StorageClass.
	StorageClassName string `json:"storageClassName,omitempty"`
	// Size is the claim's storage request.
	Size resource.Quantity `json:"size"`
	// MaxSize lets a Profile ask for more than Size, up to MaxSize. Zero
	// means a Profile cannot change the size.
	MaxSize resource.Quantity `json:"maxSize,omitempty"`
	// AccessModes of the claim. Default [ReadWriteOnce].
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	// Labels go on the claim, such as the label that makes notebooks mount it.
	Labels map[string]string `json:"labels,omitempty"`
}

// Volume is a Profile's choice of one template.
type Volume struct {
	// Template names one of the host's templates.
	Template string `json:"template"`
	// Size asks for more than the template's size, up to its MaxSize.
	Size *resource.Quantity `json:"size,omitempty"`
}

// Config is the volumes plugin's configuration. A Profile may set Volumes;
// everything else is the host's.
type Config struct {
	// Templates are the volumes the host offers.
	Templates []Template `json:"templates,omitempty" profilekit:"hostonly"`
	// Volumes are the templates a Profile gets. The host's list is the
	// default; a Profile's list replaces it.
	Volumes []Volume `json:"volumes,omitempty"`
	// Match says which retained volumes a returning Profile gets back.
	// Whatever it says, a volume retained for another owner is never given.
	// Default Profile.
	Match Match `json:"match,omitempty" profilekit:"hostonly"`
	// RetainFor, when set, lets the sweeper delete volumes released longer
	// ago than this. Zero keeps them until an administrator deletes them.
	RetainFor metav1.Duration `json:"retainFor,omitempty" profilekit:"hostonly"`
	// SweepDryRun makes the sweeper report the volumes it would delete
	// without deleting them. Turn it off once the report looks right.
	SweepDryRun bool `json:"sweepDryRun,omitempty" profilekit:"hostonly"`
	// MaxDeletesPerSweep bounds the volumes the sweeper deletes per
	// SweepInterval, counted in SweepRecord so that a host that restarts
	// (and sweeps at once) does not start again from zero. Default 10.
	MaxDeletesPerSweep int `json:"maxDeletesPerSweep,omitempty" profilekit:"hostonly"`
	// SweepInterval is how often the sweeper runs. Default 1h.
	SweepInterval metav1.Duration `json:"sweepInterval,omitempty" profilekit:"hostonly"`
	// SweepRecord is the ConfigMap in which the sweeper records its
	// deletions. Default DefaultSweepRecord in the namespace the host runs in
	// (its leader election namespace); a sweeper with no namespace for it
	// deletes nothing.
	SweepRecord outside.ConfigMapRef `json:"sweepRecord,omitempty" profilekit:"hostonly"`
}

// DefaultSweepRecord is the default name of the sweeper's record.
const DefaultSweepRecord = "profilekit-volumes-sweeps"

// NewConfig returns a Config holding the built-in defaults.
func NewConfig() *Config {
	return &Config{
		Match:              MatchProfile,
		MaxDeletesPerSweep: 10,
		SweepInterval:      metav1.Duration{Duration: time.Hour},
	}
}

// Template returns the host's template of that name.
func (c *Config) Template(name string) (Template, bool) {
	i := slices.IndexFunc(c.Templates, func(t Template) bool { return t.Name == name })
	if i < 0 {
		return Template{}, false
	}
	return c.Templates[i].withDefaults(), true
}

func (t Template) withDefaults() Template {
	if t.ClaimName == "" {
		t.ClaimName = t.Name
	}
	if len(t.AccessModes) == 0 {
		t.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	return t
}

// Validate checks templates, the Profile's choices against them, and the
// retention settings.
func (c *Config) Validate() error {
	var errs []error
	names := map[string]bool{}
	claims := map[string]bool{}
	for i, t := range c.Templates {
		t = t.withDefaults()
		at := field.NewPath("templates").Index(i)
		if msgs := validation.IsDNS1123Label(t.Name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s %q: %s", at.Child("name"), t.Name, strings.Join(msgs, "; ")))
		}
		if names[t.Name] {
			errs = append(errs, fmt.Errorf("%s %q: listed twice", at.Child("name"), t.Name))
		}
		names[t.Name] = true
		if msgs := validation.IsDNS1123Subdomain(t.ClaimName); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s %q: %s", at.Child("claimName"), t.ClaimName, strings.Join(msgs, "; ")))
		}
		if claims[t.ClaimName] {
			errs = append(errs, fmt.Errorf("%s %q: another template has this claim name", at.Child("claimName"), t.ClaimName))
		}
		claims[t.ClaimName] = true
		if plugins.IsUpstreamName(t.ClaimName) {
			errs = append(errs, fmt.Errorf("%s %q belongs to the upstream profile controller", at.Child("claimName"), t.ClaimName))
		}
		if t.Size.Sign() <= 0 {
			errs = append(errs, fmt.Errorf("%s %q: must be positive", at.Child("size"), t.Size.String()))
		}
		if !t.MaxSize.IsZero() && t.MaxSize.Cmp(t.Size) < 0 {
			errs = append(errs, fmt.Errorf("%s %s is below size %s", at.Child("maxSize"), t.MaxSize.String(), t.Size.String()))
		}
		for _, m := range t.AccessModes {
			switch m {
			case corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod:
			default:
				errs = append(errs, fmt.Errorf("%s: %q is not an access mode", at.Child("accessModes"), m))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(t.Labels)) {
			if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s: %s", at.Child("labels").Key(k), strings.Join(msgs, "; ")))
			}
			if msgs := validation.IsValidLabelValue(t.Labels[k]); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s=%q: %s", at.Child("labels").Key(k), t.Labels[k], strings.Join(msgs, "; ")))
			}
		}
	}
	chosen := map[string]bool{}
	for i, v := range c.Volumes {
		at := field.NewPath("volumes").Index(i)
		t, ok := c.Template(v.Template)
		if !ok {
			errs = append(errs, fmt.Errorf("%s %q: not one of the host's templates %v", at.Child("template"), v.Template, sortedNames(c.Templates)))
			continue
		}
		if chosen[v.Template] {
			errs = append(errs, fmt.Errorf("%s %q: chosen twice", at.Child("template"), v.Template))
		}
		chosen[v.Template] = true
		if v.Size == nil {
			continue
		}
		switch {
		case v.Size.Cmp(t.Size) < 0:
			errs = append(errs, fmt.Errorf("%s %s is below the template's size %s", at.Child("size"), v.Size.String(), t.Size.String()))
		case v.Size.Cmp(t.Size) > 0 && t.MaxSize.IsZero():
			errs = append(errs, fmt.Errorf("%s %s: template %q has a fixed size %s", at.Child("size"), v.Size.String(), t.Name, t.Size.String()))
		case !t.MaxSize.IsZero() && v.Size.Cmp(t.MaxSize) > 0:
			errs = append(errs, fmt.Errorf("%s %s is above the template's cap %s", at.Child("size"), v.Size.String(), t.MaxSize.String()))
		}
	}
	switch c.Match {
	case MatchProfile, MatchOwner:
	default:
		errs = append(errs, fmt.Errorf("match %q: want %s or %s", c.Match, MatchProfile, MatchOwner))
	}
	if c.RetainFor.Duration < 0 {
		errs = append(errs, fmt.Errorf("retainFor %s is negative", c.RetainFor.Duration))
	}
	if c.MaxDeletesPerSweep <= 0 {
		errs = append(errs, fmt.Errorf("maxDeletesPerSweep %d: must be positive", c.MaxDeletesPerSweep))
	}
	if c.SweepInterval.Duration <= 0 {
		errs = append(errs, fmt.Errorf("sweepInterval %s: must be positive", c.SweepInterval.Duration))
	}
	if err := c.SweepRecord.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("sweepRecord: %w", err))
	}
	return errors.Join(errs...)
}

func sortedNames(ts []Template) []string {
	names := make([]string, 0, len(ts))
	for _, t := range ts {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names
}
