package plugintest

// This file holds the views a perturbed pass decides from: what a host's
// cache holds at one moment, of every kind the plugin reads.

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// read is a kind a pass read in one namespace: "" for every namespace or
// a cluster-scoped kind, "<profile>" for the Profile's.
type read struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// reads are the kinds the passes of a run read.
type reads struct {
	mu   sync.Mutex
	seen map[read]bool
}

func (rs *reads) add(r read) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.seen == nil {
		rs.seen = map[read]bool{}
	}
	rs.seen[r] = true
}

// all returns the reads, in no order.
func (rs *reads) all() []read {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]read, 0, len(rs.seen))
	for r := range rs.seen {
		out = append(out, r)
	}
	return out
}

// split reads through reads and writes through its Client, noting the
// kind and namespace of every read.
type split struct {
	client.Client
	reads client.Reader
	note  func(gvk schema.GroupVersionKind, namespace string)
}

func (s split) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if gvk, err := apiutil.GVKForObject(obj, s.Scheme()); err == nil {
		s.note(gvk, key.Namespace)
	}
	return s.reads.Get(ctx, key, obj, opts...)
}

func (s split) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if gvk, err := apiutil.GVKForObject(list, s.Scheme()); err == nil {
		var lo client.ListOptions
		lo.ApplyOptions(opts)
		s.note(gvk.GroupVersion().WithKind(strings.TrimSuffix(gvk.Kind, "List")), lo.Namespace)
	}
	return s.reads.List(ctx, list, opts...)
}

// noteRead records a read of r's passes, with the Profile's namespace in
// the generic form.
func (r *run) noteRead(gvk schema.GroupVersionKind, namespace string) {
	if namespace == r.profile.Name {
		namespace = "<profile>"
	}
	r.reads.add(read{gvk: gvk, namespace: namespace})
}

// snapshot lists what a cache of the host would hold now: every kind the
// passes of the scenario read (in the namespaces they read it), the
// plugin's kinds in the Profile's namespace, the Profile's namespace
// itself and the outside-state records.
func (r *run) snapshot(ctx context.Context) ([]client.Object, error) {
	views := []read{
		{gvk: corev1.SchemeGroupVersion.WithKind("ConfigMap"), namespace: r.h.recordsNamespace()},
		{gvk: corev1.SchemeGroupVersion.WithKind("Namespace")},
	}
	for _, gvk := range r.sc.Def.Owns {
		views = append(views, read{gvk: gvk, namespace: "<profile>"})
	}
	views = append(views, r.views...)
	seen := map[string]bool{}
	var out []client.Object
	for _, v := range views {
		ns := v.namespace
		if ns == "<profile>" {
			ns = r.profile.Name
		}
		var list unstructured.UnstructuredList
		list.SetGroupVersionKind(v.gvk.GroupVersion().WithKind(v.gvk.Kind + "List"))
		if err := r.h.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", v.gvk.Kind, err)
		}
		for i := range list.Items {
			u := &list.Items[i]
			if u.GetDeletionTimestamp() != nil && len(u.GetFinalizers()) == 0 {
				continue // gone from any cache a moment from now
			}
			key := v.gvk.String() + " " + u.GetNamespace() + "/" + u.GetName()
			if !seen[key] {
				seen[key] = true
				out = append(out, u)
			}
		}
	}
	return out, nil
}
