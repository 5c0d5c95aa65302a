package demo

// This file holds the demo's printing: titles, a Profile's conditions and
// owned objects, Events, and the short descriptions of objects.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

func (d *demo) printf(format string, args ...any) { fmt.Fprintf(d.Out, format, args...) }

func (d *demo) title(s string) { d.printf("\n== %s\n", s) }

// show prints a Profile's plugin conditions and the objects the plugins wrote.
func (d *demo) show(ctx context.Context, name string) error {
	p, err := d.get(ctx, name)
	if err != nil {
		return err
	}
	d.printf("\nProfile %s  owner %s  labels %s\n", p.Name, p.Spec.Owner.Name, labelString(p.Labels))
	tw := tabwriter.NewWriter(d.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  PLUGIN\tCONDITION\tSTATUS\tMESSAGE")
	applying := d.applying(p)
	for _, def := range d.defs {
		c := plugins.FindCondition(p.Status.Conditions, def.Condition())
		switch {
		case c != nil:
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", def.Kind(), c.Type, c.Status, c.Message)
		case slices.ContainsFunc(applying, func(a plugins.Definition) bool { return a.Kind() == def.Kind() }):
			fmt.Fprintf(tw, "  %s\t%s\t-\tnot reported yet\n", def.Kind(), def.Condition())
		default:
			fmt.Fprintf(tw, "  %s\t-\t-\tdoes not apply to this Profile\n", def.Kind())
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	objs, err := d.owned(ctx, p.Name)
	if err != nil {
		return err
	}
	d.printObjects(objs)
	return nil
}

func (d *demo) printObjects(objs []ownedObject) {
	if len(objs) == 0 {
		d.printf("  (no objects)\n")
		return
	}
	tw := tabwriter.NewWriter(d.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  OBJECT\tPLUGIN\tDETAILS")
	for _, o := range objs {
		fmt.Fprintf(tw, "  %s %s/%s\t%s\t%s\n", o.u.GetKind(), o.u.GetNamespace(), o.u.GetName(), o.plugin, describe(o.u))
	}
	_ = tw.Flush()
}

type ownedObject struct {
	plugin string
	u      *unstructured.Unstructured
}

// owned lists, straight from the API server, every object a plugin wrote for
// the Profile, found by profilekit's labels.
func (d *demo) owned(ctx context.Context, profile string) ([]ownedObject, error) {
	var out []ownedObject
	for _, def := range d.defs {
		for _, gvk := range def.Owns {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			sel := client.MatchingLabelsSelector{Selector: plugins.OwnedSelector(def.Kind(), profile)}
			if err := d.c.List(ctx, list, sel); err != nil {
				return nil, fmt.Errorf("list %s: %w", gvk.Kind, err)
			}
			for i := range list.Items {
				out = append(out, ownedObject{plugin: def.Kind(), u: &list.Items[i]})
			}
		}
	}
	slices.SortFunc(out, func(a, b ownedObject) int {
		return strings.Compare(a.u.GetKind()+"/"+a.u.GetNamespace()+"/"+a.u.GetName(), b.u.GetKind()+"/"+b.u.GetNamespace()+"/"+b.u.GetName())
	})
	return out, nil
}

// events returns the Events about a Profile, oldest first, as "Type Reason: note".
func (d *demo) events(ctx context.Context, profile string, reasons ...string) ([]string, error) {
	var list eventsv1.EventList
	if err := d.c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	items := slices.Clone(list.Items)
	slices.SortStableFunc(items, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	var out []string
	for _, e := range items {
		if e.Regarding.Kind != "Profile" || e.Regarding.Name != profile {
			continue
		}
		if len(reasons) > 0 && !slices.Contains(reasons, e.Reason) {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s (%s): %s", e.Type, e.Reason, e.ReportingController, e.Note))
	}
	return out, nil
}

func ownerRefs(u *unstructured.Unstructured, uid types.UID) string {
	var parts []string
	for _, r := range u.GetOwnerReferences() {
		id := string(r.UID)
		if len(id) > 8 {
			id = id[:8] + "..."
		}
		s := fmt.Sprintf("%s %s uid=%s", r.Kind, r.Name, id)
		if r.Controller != nil && *r.Controller {
			s += " controller"
		}
		if r.UID == uid {
			s += " (the deleted Profile)"
		}
		parts = append(parts, s)
	}
	return orNone(parts)
}

// describe summarises the kinds whose content the demo's steps change.
func describe(u *unstructured.Unstructured) string {
	switch u.GetKind() {
	case "ResourceQuota":
		hard, _, _ := unstructured.NestedStringMap(u.Object, "spec", "hard")
		return "hard " + mapString(hard)
	case "LimitRange":
		items, _, _ := unstructured.NestedSlice(u.Object, "spec", "limits")
		if len(items) == 0 {
			return ""
		}
		item, _ := items[0].(map[string]any)
		def, _, _ := unstructured.NestedStringMap(item, "default")
		req, _, _ := unstructured.NestedStringMap(item, "defaultRequest")
		return "default " + mapString(def) + "; defaultRequest " + mapString(req)
	case "RoleBinding":
		kind, _, _ := unstructured.NestedString(u.Object, "roleRef", "kind")
		name, _, _ := unstructured.NestedString(u.Object, "roleRef", "name")
		subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
		var who []string
		for _, s := range subjects {
			m, _ := s.(map[string]any)
			who = append(who, fmt.Sprintf("%v:%v", m["kind"], m["name"]))
		}
		return fmt.Sprintf("%s/%s -> %s", kind, name, strings.Join(who, ", "))
	case "Role":
		rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
		return fmt.Sprintf("%d rules", len(rules))
	case "NetworkPolicy":
		types, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "policyTypes")
		return "policyTypes " + strings.Join(types, ",")
	case "AuthorizationPolicy":
		action, _, _ := unstructured.NestedString(u.Object, "spec", "action")
		rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
		return fmt.Sprintf("%s, %d rules", cmp.Or(action, "ALLOW"), len(rules))
	case "VirtualService", "ServiceEntry":
		hosts, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "hosts")
		return "hosts " + strings.Join(hosts, ",")
	case "DestinationRule":
		host, _, _ := unstructured.NestedString(u.Object, "spec", "host")
		return "host " + host
	case "Secret":
		data, _, _ := unstructured.NestedStringMap(u.Object, "data")
		typ, _, _ := unstructured.NestedString(u.Object, "type")
		keys := slices.Sorted(maps.Keys(data))
		return fmt.Sprintf("type %s, keys %s (values not shown)", typ, strings.Join(keys, ","))
	case "ConfigMap":
		data, _, _ := unstructured.NestedStringMap(u.Object, "data")
		return "keys " + strings.Join(slices.Sorted(maps.Keys(data)), ",")
	case "PodDefault":
		desc, _, _ := unstructured.NestedString(u.Object, "spec", "desc")
		return desc
	}
	return ""
}

func resourceList(l corev1.ResourceList) string {
	m := make(map[string]string, len(l))
	for k, v := range l {
		m[string(k)] = v.String()
	}
	return mapString(m)
}

func mapString(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, " ")
}

func labelString(l map[string]string) string { return mapString(l) }

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func mustJSON(v any) []byte {
	// Maps of strings always encode.
	b, _ := json.Marshal(v)
	return b
}
