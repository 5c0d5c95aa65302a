package apps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// appHashDigits is how many hex digits of SHA-256 end a hashed Application
// name: 64 bits, beyond the reach of a search for a second pair.
const appHashDigits = 16

// ApplicationName returns the name of the Application of app in namespace
// ns: <namespace>.<app>, or, when that is longer than 63 bytes (Argo CD
// puts the name in a label value), up to 23 bytes of the namespace, a dot,
// what fits of the app name, a dot and 16 hex digits of the pair's SHA-256.
//
// No two pairs share a name, and none shares one with the names of the
// first release (LegacyApplicationName): namespaces and app names are DNS
// labels, which never hold a dot, so a short name holds exactly one dot,
// which splits it back into the pair; a hashed name holds exactly two; the
// first release's hold none. Two hashed names are equal only when 64 bits
// of SHA-256 are. Input that is not a pair of DNS labels is always hashed.
func ApplicationName(ns, app string) string {
	s := ns + "." + app
	if len(s) <= validation.LabelValueMaxLength && plainLabel(ns) && plainLabel(app) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	budget := validation.LabelValueMaxLength - appHashDigits - 2
	n := part(ns, (budget+1)/2)
	a := part(app, budget-len(n))
	return n + "." + a + "." + hex.EncodeToString(sum[:appHashDigits/2])
}

// LegacyApplicationName returns the name the first release gave the
// Application of app in namespace ns: <namespace>-<app>, or its first 54
// bytes, a dash and 8 hex digits of its SHA-256. Two pairs could share it
// (team "a-b" with app "c", team "a" with app "b-c"); it names only
// Applications that exist already (see KeptNames).
func LegacyApplicationName(ns, app string) string {
	s := ns + "-" + app
	if len(s) <= validation.LabelValueMaxLength {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return strings.TrimRight(s[:validation.LabelValueMaxLength-9], "-") + "-" + hex.EncodeToString(sum[:4])
}

// plainLabel reports whether s is non-empty and holds only a-z, 0-9 and -.
func plainLabel(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if !labelByte(s[i]) {
			return false
		}
	}
	return true
}

func labelByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' }

// part returns up to n bytes of s as a DNS label: other characters made
// dashes, no dash at either end, and "x" when nothing is left.
func part(s string, n int) string {
	b := []byte(s[:min(len(s), n)])
	for i, c := range b {
		if !labelByte(c) {
			b[i] = '-'
		}
	}
	if out := strings.Trim(string(b), "-"); out != "" {
		return out
	}
	return "x"
}

// Kept maps an app's name to the name of its Application when that is the
// first release's name, kept so that an upgrade renames nothing: Argo CD
// would delete a renamed Application's resources, volumes included.
type Kept map[string]string

// Name returns the Application name of app in namespace ns.
func (k Kept) Name(ns, app string) string {
	if n, ok := k[app]; ok {
		return n
	}
	return ApplicationName(ns, app)
}

// KeptNames returns the apps of cfg whose Application already exists
// under the first release's name and carries plugin kind's labels for
// Profile p, read from r (nil offline, which keeps nothing). Only those
// keep that name; every other Application is named by ApplicationName, so
// that a Profile created later can never take another's name.
func KeptNames(ctx context.Context, r client.Reader, cfg *Config, kind string, p *kubeflowv1.Profile) (Kept, error) {
	if r == nil {
		return nil, nil
	}
	ns := plugins.Namespace(p)
	var kept Kept
	for _, a := range cfg.Apps {
		name := LegacyApplicationName(ns, a.Name)
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(ApplicationKind)
		err := r.Get(ctx, client.ObjectKey{Namespace: cfg.ArgoCD.Namespace, Name: name}, u)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("read Application %s/%s: %w", cfg.ArgoCD.Namespace, name, err)
		}
		if plugins.IsOwnedBy(u.GetLabels(), kind, p.Name) {
			if kept == nil {
				kept = Kept{}
			}
			kept[a.Name] = name
		}
	}
	return kept, nil
}
