package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/quotas"
)

// wantObjects is the set ownedObjects should return for the Profiles.
func wantObjects(profiles map[string]bool) []string {
	var out []string
	for name, monitored := range profiles {
		out = append(out,
			ownedKey("ResourceQuota", name, quotas.DefaultName, quotas.Kind, name, "ok"),
			ownedKey("LimitRange", name, limitrange.DefaultName, limitrange.Kind, name, "ok"),
			ownedKey("NetworkPolicy", name, "default-deny", "network", name, "ok"))
		if monitored {
			out = append(out, ownedKey("NetworkPolicy", name, "allow-monitoring", "network", name, "ok"))
		}
	}
	slices.Sort(out)
	return out
}

func ownedKey(kind, ns, name, plugin, profile, owner string) string {
	return fmt.Sprintf("%s %s/%s plugin=%s profile=%s owner=%s", kind, ns, name, plugin, profile, owner)
}

// ownedObjects lists, in every namespace, the objects profilekit labels as
// belonging to a Profile whose name starts with prefix, with whether their
// owner reference points at the live Profile ("ok") or not.
func ownedObjects(t *testing.T, c client.Client, prefix string) []string {
	t.Helper()
	ctx := t.Context()
	var profiles kubeflowv1.ProfileList
	if err := c.List(ctx, &profiles); err != nil {
		t.Fatal(err)
	}
	uids := map[string]string{}
	for _, p := range profiles.Items {
		uids[p.Name] = string(p.UID)
	}
	var objs []client.Object
	var rqs corev1.ResourceQuotaList
	var lrs corev1.LimitRangeList
	var nps networkingv1.NetworkPolicyList
	sel := client.MatchingLabels{plugins.LabelManagedBy: plugins.ManagedByValue}
	for _, l := range []client.ObjectList{&rqs, &lrs, &nps} {
		if err := c.List(ctx, l, sel); err != nil {
			t.Fatal(err)
		}
	}
	for i := range rqs.Items {
		objs = append(objs, &rqs.Items[i])
	}
	for i := range lrs.Items {
		objs = append(objs, &lrs.Items[i])
	}
	for i := range nps.Items {
		objs = append(objs, &nps.Items[i])
	}
	var out []string
	for _, o := range objs {
		profile := o.GetLabels()[plugins.LabelProfile]
		if !strings.HasPrefix(profile, prefix) {
			continue
		}
		owner := "none"
		for _, ref := range o.GetOwnerReferences() {
			switch {
			case ref.Kind != "Profile" || ref.Name != profile:
				owner = "foreign:" + ref.Kind + "/" + ref.Name
			case string(ref.UID) != uids[profile]:
				owner = "stale-uid"
			case ref.Controller != nil && *ref.Controller:
				owner = "ok"
			}
		}
		var kind string
		switch o.(type) {
		case *corev1.ResourceQuota:
			kind = "ResourceQuota"
		case *corev1.LimitRange:
			kind = "LimitRange"
		case *networkingv1.NetworkPolicy:
			kind = "NetworkPolicy"
		}
		out = append(out, ownedKey(kind, o.GetNamespace(), o.GetName(), o.GetLabels()[plugins.LabelPlugin], profile, owner))
	}
	slices.Sort(out)
	return out
}

// converged reports whether every named Profile has each condition exactly
// once, all True, and says what is missing otherwise.
func converged(ctx context.Context, c client.Client, names []string, conds []string) (bool, string) {
	var missing []string
	for _, name := range names {
		var p kubeflowv1.Profile
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
			return false, err.Error()
		}
		for _, ct := range conds {
			n := 0
			for _, got := range p.Status.Conditions {
				if got.Type != ct {
					continue
				}
				n++
				if got.Status != plugins.ConditionTrue {
					missing = append(missing, fmt.Sprintf("%s %s=%s %q", name, ct, got.Status, got.Message))
				}
			}
			if n != 1 {
				missing = append(missing, fmt.Sprintf("%s has %d %s conditions", name, n, ct))
			}
		}
	}
	if len(missing) > 0 {
		return false, fmt.Sprintf("%d problems, first: %s", len(missing), strings.Join(missing[:min(3, len(missing))], "; "))
	}
	return true, ""
}

func waitConverged(t *testing.T, c client.Client, timeout time.Duration, names ...string) {
	t.Helper()
	testhost.Eventually(t, timeout, func() (bool, string) { return converged(t.Context(), c, names, faultConditions) })
}

func diffSets(want, got []string) string {
	var b strings.Builder
	for _, w := range want {
		if !slices.Contains(got, w) {
			fmt.Fprintf(&b, "\n  missing: %s", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			fmt.Fprintf(&b, "\n  unexpected: %s", g)
		}
	}
	if len(got) != len(slices.Compact(slices.Clone(got))) {
		fmt.Fprintf(&b, "\n  duplicates in %v", got)
	}
	return b.String()
}
