package plugins

// This file holds WithWriteObserver, through which a host learns of the
// Applier's own writes.

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WriteObserver is told of every create or apply the Applier sends: Writing
// before the request, Wrote after it with the object as the API server
// answered (its resource version is the one the watch event of the write
// carries) or with the error. A host uses it to tell the events of its own
// writes from other changes (see the reconcilers package), so that a write
// does not bring the Profile back for nothing.
type WriteObserver interface {
	Writing(obj client.Object)
	Wrote(obj client.Object, err error)
}

// WithWriteObserver makes the Applier tell o of its creates and applies.
func WithWriteObserver(o WriteObserver) ApplierOption {
	return func(a *Applier) { a.observer = o }
}

// writing tells the observer of a write about to be sent.
func (a *Applier) writing(obj *unstructured.Unstructured) {
	if a.observer != nil {
		a.observer.Writing(obj)
	}
}

// wrote tells the observer how a write ended; obj holds the API server's
// answer when err is nil.
func (a *Applier) wrote(obj *unstructured.Unstructured, err error) {
	if a.observer != nil {
		a.observer.Wrote(obj, err)
	}
}
