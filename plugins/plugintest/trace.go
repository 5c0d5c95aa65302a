package plugintest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/profilekit/profilekit/plugins/outside"
)

// Write is one write request a pass sent to the API server.
type Write struct {
	// Verb is create, update, patch, apply or delete.
	Verb string
	// Kind, Namespace and Name name the object.
	Kind, Namespace, Name string
	// refused is true when the API server refused the write: it changed
	// nothing (a create-only apply of a name that is taken, say).
	refused bool
}

func (w Write) String() string {
	return fmt.Sprintf("%s %s %s/%s", w.Verb, w.Kind, w.Namespace, w.Name)
}

// errCrashed is what a write after the crash gets: the process is gone.
var errCrashed = errors.New("plugintest: the host stopped before this write")

// recorder records the writes sent through the clients it wraps.
type recorder struct {
	mu     sync.Mutex
	writes []Write
	// after, when set, runs after each write and outside call is done,
	// told which of the two it was.
	after func(call bool)
}

// done runs after once a write has been made.
func (r *recorder) done() {
	if r.after != nil {
		r.after(false)
	}
}

// doneCall runs after once an outside call has been made.
func (r *recorder) doneCall() {
	if r.after != nil {
		r.after(true)
	}
}

// take records w unless the crash came before it, and returns its index.
func (r *recorder) take(w Write, allow int, before func(i int)) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if allow >= 0 && len(r.writes) >= allow {
		return 0, errCrashed
	}
	if before != nil {
		before(len(r.writes))
	}
	r.writes = append(r.writes, w)
	return len(r.writes) - 1, nil
}

// sent notes how write i ended, runs after, and returns err.
func (r *recorder) sent(i int, err error) error {
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsInvalid(err) || apierrors.IsNotFound(err) {
		r.mu.Lock()
		r.writes[i].refused = true
		r.mu.Unlock()
	}
	r.done()
	return err
}

// outside returns the gate that records each outside call as a write of
// verb "call" and kind the system, in the same sequence as the API
// server's writes, under the same crash. fail, when set, may replace the
// result of call i: before it is made (made false) or after (made true).
func (r *recorder) outside(allow int, before func(i int), fail func(i int, made bool) error) outside.CallGate {
	var index int
	return outside.CallGate{
		Before: func(system string) error {
			i, err := r.take(Write{Verb: "call", Kind: system}, allow, before)
			if err != nil {
				return err
			}
			r.mu.Lock()
			index = i
			r.mu.Unlock()
			if fail != nil {
				return fail(index, false)
			}
			return nil
		},
		After: func(system string, err error) error {
			r.doneCall()
			if fail != nil && err == nil {
				return fail(index, true)
			}
			return err
		},
	}
}

// wrap returns c with every write recorded. After allow writes (none
// when allow is negative) every further write fails with errCrashed and
// is not sent. before, when set, runs before each write is sent, with its
// index.
func (r *recorder) wrap(cl client.Client, allow int, before func(i int)) client.Client {
	c := withWatch{cl}
	gate := func(verb string, obj runtime.Object) (int, error) {
		w := Write{Verb: verb}
		if gvk, err := apiutil.GVKForObject(obj, c.Scheme()); err == nil {
			w.Kind = gvk.Kind
		}
		if o, ok := obj.(client.Object); ok {
			w.Namespace, w.Name = o.GetNamespace(), o.GetName()
		}
		return r.take(w, allow, before)
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			i, err := gate("create", obj)
			if err != nil {
				return err
			}
			return r.sent(i, c.Create(ctx, obj, opts...))
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			i, err := gate("update", obj)
			if err != nil {
				return err
			}
			return r.sent(i, c.Update(ctx, obj, opts...))
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			i, err := gate("patch", obj)
			if err != nil {
				return err
			}
			return r.sent(i, c.Patch(ctx, obj, patch, opts...))
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				return err
			}
			i, err := gate("apply", unstructuredOf(u))
			if err != nil {
				return err
			}
			return r.sent(i, c.Apply(ctx, obj, opts...))
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			i, err := gate("delete", obj)
			if err != nil {
				return err
			}
			return r.sent(i, c.Delete(ctx, obj, opts...))
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			i, err := gate("deletecollection", obj)
			if err != nil {
				return err
			}
			return r.sent(i, c.DeleteAllOf(ctx, obj, opts...))
		},
	})
}

// unstructuredOf is an object of u's content, for the write's name.
func unstructuredOf(u map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: u}
}

// withWatch gives a client the Watch the interceptor's type asks for; the
// harness never watches.
type withWatch struct{ client.Client }

func (withWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("plugintest: no watch")
}
