package plugintest

// This file holds the read that the StaleGuard mutant gives a guard: from
// the host's cache instead of the API server, and noticed when the two
// differ.

import (
	"context"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// staleRead reads through cache what a guard would read from the API
// server (live), and calls hit when the answers differ: the object is
// there in one and not the other, or at another resourceVersion. A guard
// that read the same from both was not changed by the mutant.
type staleRead struct {
	cache client.Reader
	live  client.Reader
	hit   func()
}

var _ client.Reader = staleRead{}

func (s staleRead) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	fresh := obj.DeepCopyObject().(client.Object)
	err := s.cache.Get(ctx, key, obj, opts...)
	ferr := s.live.Get(ctx, key, fresh, opts...)
	if apierrors.IsNotFound(err) != apierrors.IsNotFound(ferr) ||
		err == nil && ferr == nil && obj.GetResourceVersion() != fresh.GetResourceVersion() {
		s.hit()
	}
	return err
}

func (s staleRead) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	fresh := list.DeepCopyObject().(client.ObjectList)
	if err := s.cache.List(ctx, list, opts...); err != nil {
		return err
	}
	if err := s.live.List(ctx, fresh, opts...); err != nil {
		return nil // the API server's answer is only for the comparison
	}
	if versions(list) != versions(fresh) {
		s.hit()
	}
	return nil
}

// versions names the items of list with their resourceVersions.
func versions(list client.ObjectList) string {
	var out []string
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		if m, err := meta.Accessor(o); err == nil {
			out = append(out, m.GetNamespace()+"/"+m.GetName()+"@"+m.GetResourceVersion())
		}
		return nil
	})
	slices.Sort(out)
	return strings.Join(out, " ")
}
