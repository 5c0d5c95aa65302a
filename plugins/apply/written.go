package apply

// This file holds how the Applier sends a write, and WithWriteObserver,
// through which a host learns of those writes.

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// WriteObserver is told of every create or apply the Applier sends: Writing
// before the request, Wrote after it with the resource version the API
// server answered (the one the watch event of the write carries), or with
// the error and no version. A host uses it to tell the events of its own
// writes from other changes (see the reconcilers package), so that a write
// does not bring the Profile back for nothing.
type WriteObserver interface {
	Writing(obj client.Object)
	Wrote(obj client.Object, version string, err error)
}

// WriteRecall is what a WriteObserver may also know: Unseen returns the
// applied hash (AnnotationAppliedHash) of the last write of obj that the
// API server took and whose watch event the cache has not shown yet. The
// Applier asks it when its cache holds no object of a desired name: a pass
// that closely follows its own write (brought by an event of another
// object) then sends nothing for an object it wrote with the same hash a
// moment ago, where it would send an apply refused as a Conflict and a
// read. A different hash takes the Applier's usual path, which proves
// ownership before it writes.
type WriteRecall interface {
	Unseen(obj client.Object) (hash string, ok bool)
}

// writtenUnseen reports whether the Applier's observer recalls a write of
// u, with u's hash, that the cache does not show yet.
func (a *Applier) writtenUnseen(u *unstructured.Unstructured) bool {
	if a.observer == nil {
		return false
	}
	hash, ok := a.observer.Unseen(u)
	return ok && hash == appliedHashOf(u)
}

// WithWriteObserver makes the Applier tell o of its creates and applies.
// The Applier sends a pass's namespaced objects at once, but calls o from
// one goroutine at a time.
func WithWriteObserver(o WriteObserver) Option {
	return func(a *Applier) { a.observer = &serialObserver{o: o} }
}

// serialObserver calls its WriteObserver, and its WriteRecall if it is one,
// one call at a time.
type serialObserver struct {
	mu sync.Mutex
	o  WriteObserver
}

func (s *serialObserver) Writing(obj client.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.o.Writing(obj)
}

func (s *serialObserver) Wrote(obj client.Object, version string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.o.Wrote(obj, version, err)
}

// Unseen asks the observer's WriteRecall; an observer without one recalls
// nothing.
func (s *serialObserver) Unseen(obj client.Object) (string, bool) {
	r, ok := s.o.(WriteRecall)
	if !ok {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return r.Unseen(obj)
}

// send applies u server-side under the plugin's field manager with forced
// ownership. It asks for the answer as metadata only: the Applier needs no
// more than the resource version, and a whole object costs the API server
// its encoding and the host its decoding, for every write.
func (a *Applier) send(ctx context.Context, u *unstructured.Unstructured) error {
	_, err := a.sendApply(ctx, u, true)
	return err
}

// sendApply is send, with forced ownership only when force, and returns
// the answer's metadata. Without force the API server refuses the apply
// with a Conflict, and changes nothing, when another field manager holds a
// field the apply sets, with another value.
func (a *Applier) sendApply(ctx context.Context, u *unstructured.Unstructured, force bool) (*metav1.PartialObjectMetadata, error) {
	body, err := encodeObject(u.Object)
	if err != nil {
		return nil, err
	}
	answer := NewMetadata(u.GroupVersionKind())
	answer.SetNamespace(u.GetNamespace())
	answer.SetName(u.GetName())
	if a.observer != nil {
		a.observer.Writing(u)
	}
	opts := []client.PatchOption{client.FieldOwner(plugins.FieldManagerFor(a.kind))}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	err = a.writer.Patch(ctx, answer, client.RawPatch(types.ApplyPatchType, body), opts...)
	if a.observer != nil {
		version := ""
		if err == nil {
			version = answer.GetResourceVersion()
		}
		a.observer.Wrote(u, version, err)
	}
	return answer, err
}
