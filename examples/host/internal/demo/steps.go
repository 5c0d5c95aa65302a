package demo

// This file holds the narrated steps after the Profiles are created:
// overriding a quota with a label, repairing drift, opting out, and
// deleting a Profile.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/quotas"
)

// overrideLabel raises a Profile's quota with a label, then shows what a bad
// label does: the condition says which label, and the quota stays as it was.
func (d *demo) overrideLabel(ctx context.Context, profiles []*kubeflowv1.Profile) error {
	d.title("2. Override a quota with a Profile label")
	def, ok := d.def(quotas.Kind)
	if !ok {
		d.printf("the quotas plugin is not enabled; nothing to show\n")
		return nil
	}
	sec, _ := d.Config.Section(quotas.Kind)
	raw, err := def.DecodeHostDefaults(sec.Defaults)
	if err != nil {
		return err
	}
	qc, _ := raw.(*quotas.Config)
	if qc == nil || qc.LabelPrefix == "" {
		d.printf("the quotas configuration has no labelPrefix; label overrides are off\n")
		return nil
	}
	var target *kubeflowv1.Profile
	for _, p := range profiles {
		if slices.ContainsFunc(d.applying(p), func(x plugins.Definition) bool { return x.Kind() == quotas.Kind }) {
			target = p
			break
		}
	}
	if target == nil {
		d.printf("no sample Profile gets a quota; nothing to show\n")
		return nil
	}
	key := qc.LabelPrefix + "/limits.cpu"
	value := "32"
	if c, ok := qc.Caps["limits.cpu"]; ok && c.CmpInt64(32) < 0 {
		value = c.String()
	}
	before, err := d.quotaHard(ctx, target.Name, qc.Name)
	if err != nil {
		return err
	}
	d.printf("Profile %s: set label %s=%s (quota now: %s)\n", target.Name, key, value, before)
	if err := d.setLabel(ctx, target.Name, key, value); err != nil {
		return err
	}
	var after string
	err = d.eventually(ctx, "quota limits.cpu="+value, func(ctx context.Context) (bool, string, error) {
		after, err = d.quotaHard(ctx, target.Name, qc.Name)
		return strings.Contains(after, "limits.cpu="+value+" ") || strings.HasSuffix(after, "limits.cpu="+value), after, err
	})
	if err != nil {
		return err
	}
	d.printf("  -> ResourceQuota %s/%s updated in place: %s\n", target.Name, qc.Name, after)

	bad := qc.LabelPrefix + "/limits.memory"
	d.printf("Profile %s: set a label that is not a quantity, %s=lots\n", target.Name, bad)
	if err := d.setLabel(ctx, target.Name, bad, "lots"); err != nil {
		return err
	}
	cond, err := d.waitCondition(ctx, target.Name, def.Condition(), plugins.ConditionFalse)
	if err != nil {
		return err
	}
	still, err := d.quotaHard(ctx, target.Name, qc.Name)
	if err != nil {
		return err
	}
	d.printf("  -> %s\n  -> the quota is left as it was: %s\n", cond, still)
	if evs, err := d.events(ctx, target.Name, plugins.ReasonInvalidLabel); err == nil && len(evs) > 0 {
		d.printf("  -> Event: %s\n", evs[len(evs)-1])
	}
	d.printf("Profile %s: remove the bad label\n", target.Name)
	if err := d.setLabel(ctx, target.Name, bad, ""); err != nil {
		return err
	}
	cond, err = d.waitCondition(ctx, target.Name, def.Condition(), plugins.ConditionTrue)
	if err != nil {
		return err
	}
	d.printf("  -> %s\n", cond)
	return nil
}

// repairDrift deletes one of a Profile's objects by hand and times how long
// the plugin takes to put it back: it watches its own objects, so it does
// not wait for the resync.
func (d *demo) repairDrift(ctx context.Context, name string) error {
	d.title("3. Repair a hand edit")
	objs, err := d.owned(ctx, name)
	if err != nil {
		return err
	}
	if len(objs) == 0 {
		d.printf("Profile %s has no objects; nothing to show\n", name)
		return nil
	}
	victim := objs[0]
	u := victim.u
	d.printf("delete %s %s/%s (written by %s) by hand\n", u.GetKind(), u.GetNamespace(), u.GetName(), victim.plugin)
	start := time.Now()
	uid := u.GetUID()
	if err := d.c.Delete(ctx, u, client.Preconditions{UID: &uid}); err != nil {
		return fmt.Errorf("delete %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	err = d.eventually(ctx, u.GetKind()+" back", func(ctx context.Context) (bool, string, error) {
		back := &unstructured.Unstructured{}
		back.SetGroupVersionKind(u.GroupVersionKind())
		err := d.c.Get(ctx, client.ObjectKeyFromObject(u), back)
		if apierrors.IsNotFound(err) {
			return false, "not yet", nil
		}
		if err != nil {
			return false, "", err
		}
		return back.GetUID() != uid, "uid " + string(back.GetUID()), nil
	})
	if err != nil {
		return err
	}
	d.printf("  -> %s put it back in %s (a new object; the resync period is %s)\n", victim.plugin, time.Since(start).Round(time.Millisecond), d.Config.Resync())
	return nil
}

func (d *demo) def(kind string) (plugins.Definition, bool) {
	for _, def := range d.defs {
		if def.Kind() == kind {
			return def, true
		}
	}
	return plugins.Definition{}, false
}

func (d *demo) quotaHard(ctx context.Context, ns, name string) (string, error) {
	var rq corev1.ResourceQuota
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &rq); err != nil {
		return "", fmt.Errorf("get ResourceQuota %s/%s: %w", ns, name, err)
	}
	return resourceList(rq.Spec.Hard), nil
}

// setLabel sets (or, with an empty value, removes) one label with a merge
// patch, as a person or a GitOps tool would.
func (d *demo) setLabel(ctx context.Context, name, key, value string) error {
	var v any = value
	if value == "" {
		v = nil
	}
	patch := map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}}
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := d.c.Patch(ctx, p, client.RawPatch("application/merge-patch+json", mustJSON(patch))); err != nil {
		return fmt.Errorf("label Profile %s: %w", name, err)
	}
	return nil
}

// optOut removes a plugin from a Profile that lists it, where the host serves
// only listing Profiles, and shows the plugin's Revoke.
func (d *demo) optOut(ctx context.Context, profiles []*kubeflowv1.Profile) error {
	d.title("4. Opt a Profile out of a plugin it lists")
	var target *kubeflowv1.Profile
	var def plugins.Definition
	for _, p := range profiles {
		for _, x := range d.applying(p) {
			sec, _ := d.Config.Section(x.Kind())
			if sec.Enabled == hostconfig.EnabledListed && plugins.Listed(p, x.Kind()) {
				target, def = p, x
				break
			}
		}
		if target != nil {
			break
		}
	}
	if target == nil {
		d.printf("no sample Profile lists a plugin that the configuration enables as listed; nothing to show\n")
		return nil
	}
	what := fmt.Sprintf("remove %s from spec.plugins (the host runs it with enabled: listed)", def.Kind())
	err := d.revokeBy(ctx, target.Name, def, what, func() error {
		p, err := d.get(ctx, target.Name)
		if err != nil {
			return err
		}
		before := p.DeepCopy()
		p.Spec.Plugins = slices.DeleteFunc(p.Spec.Plugins, func(e kubeflowv1.Plugin) bool { return e.Kind == def.Kind() })
		if err := d.c.Patch(ctx, p, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("update Profile %s: %w", target.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return d.show(ctx, target.Name)
}

// optOutByLabel sets the label that a plugin's selector excludes (enabled:
// all with a NotIn or DoesNotExist expression) on a Profile the plugin
// serves without being listed, and shows the plugin's Revoke.
func (d *demo) optOutByLabel(ctx context.Context, profiles []*kubeflowv1.Profile) error {
	d.title("5. Opt a Profile out of a plugin enabled for all, by label")
	for _, p := range profiles {
		for _, def := range d.applying(p) {
			sec, _ := d.Config.Section(def.Kind())
			if sec.Enabled != hostconfig.EnabledAll || sec.Selector == nil || plugins.Listed(p, def.Kind()) {
				continue
			}
			key, value, ok := excludingLabel(sec.Selector)
			if !ok {
				continue
			}
			return d.revokeBy(ctx, p.Name, def, fmt.Sprintf("set label %s=%s, which the %s selector excludes", key, value, def.Kind()), func() error {
				return d.setLabel(ctx, p.Name, key, value)
			})
		}
	}
	d.printf("no plugin enabled for all has a selector that a label can opt out of; nothing to show\n")
	return nil
}

// excludingLabel returns a label that the selector does not match.
func excludingLabel(sel *metav1.LabelSelector) (string, string, bool) {
	for _, e := range sel.MatchExpressions {
		switch e.Operator {
		case metav1.LabelSelectorOpNotIn:
			if len(e.Values) > 0 {
				return e.Key, e.Values[0], true
			}
		case metav1.LabelSelectorOpDoesNotExist:
			return e.Key, "true", true
		}
	}
	return "", "", false
}

// revokeBy shows a plugin's objects for a Profile, makes the change, waits
// until the plugin has revoked itself, and shows the Events.
func (d *demo) revokeBy(ctx context.Context, name string, def plugins.Definition, what string, change func() error) error {
	objs, err := d.owned(ctx, name)
	if err != nil {
		return err
	}
	d.printf("Profile %s: %s objects now:\n", name, def.Kind())
	d.printObjects(filterPlugin(objs, def.Kind()))
	d.printf("Profile %s: %s\n", name, what)
	seen, err := d.events(ctx, name, plugins.ReasonRevoked)
	if err != nil {
		return err
	}
	if err := change(); err != nil {
		return err
	}
	err = d.eventually(ctx, def.Kind()+" revoked", func(ctx context.Context) (bool, string, error) {
		p, err := d.get(ctx, name)
		if err != nil {
			return false, "", err
		}
		objs, err := d.owned(ctx, name)
		if err != nil {
			return false, "", err
		}
		left := len(filterPlugin(objs, def.Kind()))
		c := plugins.FindCondition(p.Status.Conditions, def.Condition())
		return left == 0 && c == nil, fmt.Sprintf("%d objects left, condition %v", left, c), nil
	})
	if err != nil {
		return err
	}
	d.printf("  -> Revoke deleted the plugin's objects and removed %s from the Profile's status\n", def.Condition())
	evs, err := d.events(ctx, name, plugins.ReasonRevoked)
	if err != nil {
		return err
	}
	for _, e := range evs[min(len(seen), len(evs)):] {
		d.printf("  -> Event: %s\n", e)
	}
	return nil
}

func filterPlugin(objs []ownedObject, kind string) []ownedObject {
	var out []ownedObject
	for _, o := range objs {
		if o.plugin == kind {
			out = append(out, o)
		}
	}
	return out
}

// deleteProfile deletes a Profile and shows what happens to its objects.
func (d *demo) deleteProfile(ctx context.Context, name string) error {
	d.title("6. Delete a Profile")
	p, err := d.get(ctx, name)
	if err != nil {
		return err
	}
	objs, err := d.owned(ctx, name)
	if err != nil {
		return err
	}
	d.printf("Profile %s (uid %s) has %d objects from profilekit; finalizers: %s\n", name, p.UID, len(objs), orNone(p.Finalizers))
	seen, err := d.events(ctx, name, plugins.ReasonRevoked)
	if err != nil {
		return err
	}
	if err := d.c.Delete(ctx, p); err != nil {
		return fmt.Errorf("delete Profile %s: %w", name, err)
	}
	err = d.eventually(ctx, "Profile "+name+" gone", func(ctx context.Context) (bool, string, error) {
		var q kubeflowv1.Profile
		err := d.c.Get(ctx, client.ObjectKey{Name: name}, &q)
		if apierrors.IsNotFound(err) {
			return true, "gone", nil
		}
		if err != nil {
			return false, "", err
		}
		return false, "finalizers " + orNone(q.Finalizers), nil
	})
	if err != nil {
		return err
	}
	d.printf("  -> the Profile is gone")
	if len(p.Finalizers) > 0 {
		d.printf(" (the plugins with outside state ran Revoke and removed their finalizers)")
	}
	d.printf("\n")
	// Only the Events of this deletion, not those of earlier steps.
	if evs, err := d.events(ctx, name, plugins.ReasonRevoked); err == nil && len(evs) > len(seen) {
		for _, e := range evs[len(seen):] {
			d.printf("  -> Event: %s\n", e)
		}
	}
	left, err := d.owned(ctx, name)
	if err != nil {
		return err
	}
	if len(left) == 0 {
		d.printf("  -> no objects left\n")
		return nil
	}
	d.printf("  -> %d objects remain, because this control plane runs no garbage collector.\n", len(left))
	d.printf("     Each points at the deleted Profile; in a cluster the garbage collector deletes them:\n")
	tw := tabwriter.NewWriter(d.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  OBJECT\tOWNER REFERENCE")
	for _, o := range left {
		fmt.Fprintf(tw, "  %s %s/%s\t%s\n", o.u.GetKind(), o.u.GetNamespace(), o.u.GetName(), ownerRefs(o.u, p.UID))
	}
	return tw.Flush()
}
