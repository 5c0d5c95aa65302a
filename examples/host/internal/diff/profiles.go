package diff

// This file holds which Profiles diff looks at: every live Profile of the
// host's shard, or those named by files.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// LiveProfiles returns every Profile of the cluster that shard (nil: all)
// selects, by name.
func LiveProfiles(ctx context.Context, c client.Reader, shard labels.Selector) ([]*kubeflowv1.Profile, error) {
	var list kubeflowv1.ProfileList
	var opts []client.ListOption
	if shard != nil {
		opts = append(opts, client.MatchingLabelsSelector{Selector: shard})
	}
	if err := c.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("list profiles: %w", err)
	}
	out := make([]*kubeflowv1.Profile, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	slices.SortFunc(out, func(a, b *kubeflowv1.Profile) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// NamedProfiles returns, for each Profile of files, the live Profile of
// its name: the configuration is diffed against the Profiles as they are.
// A Profile the cluster does not hold is taken as the file gives it, as if
// it were created now. The notes say which were taken from files, and
// which live Profiles differ from their file (the file's change is not
// diffed).
func NamedProfiles(ctx context.Context, c client.Reader, files []*kubeflowv1.Profile) ([]*kubeflowv1.Profile, []string, error) {
	var out []*kubeflowv1.Profile
	var notes []string
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f.Name] {
			notes = append(notes, fmt.Sprintf("profile %s: given twice, the first is diffed", f.Name))
			continue
		}
		seen[f.Name] = true
		var p kubeflowv1.Profile
		err := c.Get(ctx, client.ObjectKey{Name: f.Name}, &p)
		switch {
		case apierrors.IsNotFound(err):
			notes = append(notes, fmt.Sprintf("profile %s: not in the cluster; diffed as the file gives it, as if created now", f.Name))
			out = append(out, f)
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("read profile %s: %w", f.Name, err)
		}
		if !sameInput(f, &p) {
			notes = append(notes, fmt.Sprintf("profile %s: the live Profile differs from the file; the live one is diffed", f.Name))
		}
		out = append(out, &p)
	}
	slices.SortFunc(out, func(a, b *kubeflowv1.Profile) int { return strings.Compare(a.Name, b.Name) })
	return out, notes, nil
}

// sameInput reports whether two Profiles hold the same input for the
// plugins: labels and spec.
func sameInput(a, b *kubeflowv1.Profile) bool {
	return labels.Equals(a.Labels, b.Labels) && equalJSON(a.Spec, b.Spec)
}
