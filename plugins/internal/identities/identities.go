// Package identities is the host's policy of which cloud identity (an IAM
// role, a Google service account, an Azure managed identity) a Profile may
// be bound to. A cloud identity is the platform's to hand out, not the
// Profile's: where tenants write their own Profiles (the access-management
// service's self-serve endpoint creates them from the request body), a
// Profile that could name any identity could take another team's. The
// policy is a list of allowances; an identity no allowance gives the
// Profile is refused, and an empty list refuses every identity.
package identities

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/placeholders"
)

// ReasonNotAllowed is the reason of a Profile that names an identity the
// host's policy does not give it.
const ReasonNotAllowed = plugins.ReasonIdentityNotAllowed

// Allowance gives the Profiles it selects one identity each.
type Allowance struct {
	// Identity is the identity allowed, as the Profile names it (an ARN, an
	// email, a resource ID), with the placeholders {{ .Namespace }} and
	// {{ .Profile }}: arn:aws:iam::123456789012:role/kf-{{ .Namespace }}
	// gives each Profile its own role. Compared exactly, after expansion.
	// Empty with Tag: any identity that carries the tag.
	Identity string `json:"identity,omitempty"`
	// Tag, where the plugin's cloud has tags on identities (AWS IAM roles,
	// Azure managed identities; not Google service accounts), also asks
	// that the identity carry this tag, read from the cloud before any
	// trust is written: the platform tags each identity with what it is for.
	Tag *Tag `json:"tag,omitempty"`
	// ProfileSelector narrows the allowance to the Profiles whose labels
	// match. None: every Profile.
	ProfileSelector *metav1.LabelSelector `json:"profileSelector,omitempty"`
	// Shared lets several Profiles be bound to the identity at once (a team
	// role). Without it, an identity that already serves another Profile is
	// a Conflict that names that Profile.
	Shared bool `json:"shared,omitempty"`
}

// Tag is a tag an identity must carry.
type Tag struct {
	// Key is the tag's key, such as profilekit.dev/namespace.
	Key string `json:"key"`
	// Value is the tag's value, with the placeholders {{ .Namespace }} and
	// {{ .Profile }}.
	Value string `json:"value"`
}

// Policy is the host's list of allowances.
type Policy []Allowance

// Validate checks every allowance: an identity with no unknown placeholder
// and a selector that parses.
func (p Policy) Validate() error {
	var errs []error
	for i, a := range p {
		at := field.NewPath("allowedIdentities").Index(i)
		switch {
		case strings.TrimSpace(a.Identity) == "" && a.Tag == nil:
			errs = append(errs, fmt.Errorf("%s: required unless tag is set", at.Child("identity")))
		default:
			if err := placeholders.Check(a.Identity, placeholders.Namespace, placeholders.Profile); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", at.Child("identity"), err))
			}
		}
		if a.Tag != nil {
			if strings.TrimSpace(a.Tag.Key) == "" {
				errs = append(errs, fmt.Errorf("%s: required", at.Child("tag", "key")))
			}
			if err := placeholders.Check(a.Tag.Value, placeholders.Namespace, placeholders.Profile); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", at.Child("tag", "value"), err))
			}
		}
		if _, err := metav1.LabelSelectorAsSelector(a.ProfileSelector); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at.Child("profileSelector"), err))
		}
	}
	return errors.Join(errs...)
}

// Allow returns the first allowance that gives identity to p, or a terminal
// error with ReasonNotAllowed.
func (p Policy) Allow(profile *kubeflowv1.Profile, identity string) (Allowance, error) {
	values := placeholders.Of(profile)
	for _, a := range p {
		if !selects(a.ProfileSelector, profile) {
			continue
		}
		if a.Identity == "" && a.Tag != nil || placeholders.Expand(a.Identity, values) == identity {
			return a, nil
		}
	}
	if len(p) == 0 {
		return Allowance{}, plugins.Terminalf(ReasonNotAllowed,
			"identity %q: the host allows no identity (allowedIdentities is empty); an administrator lists the identities Profiles may use", identity)
	}
	return Allowance{}, plugins.Terminalf(ReasonNotAllowed,
		"identity %q is not among the identities the host allows this Profile (allowedIdentities); nothing was granted", identity)
}

// selects reports whether sel (none: every Profile) matches p's labels.
func selects(sel *metav1.LabelSelector, p *kubeflowv1.Profile) bool {
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(p.Labels))
}

// CheckTag returns nil when the allowance asks for no tag, or when tags (the
// identity's, as the cloud has them) hold it for profile; otherwise a
// terminal error with ReasonNotAllowed.
func (a Allowance) CheckTag(profile *kubeflowv1.Profile, identity string, tags map[string]string) error {
	if a.Tag == nil {
		return nil
	}
	want := placeholders.Expand(a.Tag.Value, placeholders.Of(profile))
	got, ok := tags[a.Tag.Key]
	if ok && got == want {
		return nil
	}
	return plugins.Terminalf(ReasonNotAllowed,
		"identity %q does not carry the tag %s=%s that the host's allowance asks of it; nothing was granted", identity, a.Tag.Key, want)
}

// NeedsTag reports whether the allowance asks the identity for a tag.
func (a Allowance) NeedsTag() bool { return a.Tag != nil }

// Named returns the identities the policy's templates give profile, in the
// policy's order, each once: where profilekit's grants for the Profile can
// be, whatever its spec or record says, so that revocation fails closed.
// Allowances by tag alone name none.
func (p Policy) Named(profile *kubeflowv1.Profile) []string {
	values := placeholders.Of(profile)
	var out []string
	for _, a := range p {
		if a.Identity == "" || !selects(a.ProfileSelector, profile) {
			continue
		}
		if id := placeholders.Expand(a.Identity, values); !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
