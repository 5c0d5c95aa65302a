package plugins

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Objects writes and prunes one plugin's objects for one Profile: the
// request's Objects. Hosts give a plugin the Applier of package
// plugins/apply, or its Recorder when they render offline; a plugin sees
// only this interface.
//
// Every object written carries the plugin's ownership labels, an owner
// reference to the Profile and the hash of what was applied; an object of a
// desired name that is not the plugin's is never written (Skipped, and a
// Conflict error), and a pass with nothing changed sends nothing.
type Objects interface {
	// Sync applies desired, the complete set of the plugin's objects for
	// the Profile, and deletes its other objects. Errors of independent
	// objects are joined; one failing object does not stop the others.
	Sync(ctx context.Context, desired ...runtime.ApplyConfiguration) (Result, error)
	// Apply applies desired like Sync but deletes nothing, for plugins that
	// decide their deletions themselves.
	Apply(ctx context.Context, desired ...runtime.ApplyConfiguration) (Result, error)
	// DeleteAll deletes every object the plugin owns for the Profile,
	// except its outside-state record.
	DeleteAll(ctx context.Context) (Result, error)
	// Keep makes Sync leave the plugin's object of kind gvk at
	// namespace/name in place although it is not desired.
	Keep(gvk schema.GroupVersionKind, namespace, name string)
	// Annotate makes the annotations in want hold on obj, an object the
	// plugin does not own, writing those keys alone. A missing object is a
	// *ForeignMissingError.
	Annotate(ctx context.Context, live client.Reader, obj Foreign, want map[string]string) (Change, error)
	// Unannotate removes the plugin's keys from obj; a missing object is
	// done.
	Unannotate(ctx context.Context, live client.Reader, obj Foreign, keys ...string) (Change, error)
	// Mark makes the labels and annotations of want hold on obj, an object
	// the plugin does not own, writing those keys alone, and gives up the
	// plugin's other keys there. A missing object is a
	// *ForeignMissingError.
	Mark(ctx context.Context, live client.Reader, obj Foreign, want Marks) (Change, error)
	// Unmark gives up every label and annotation key the plugin holds on
	// obj; a missing object is done.
	Unmark(ctx context.Context, live client.Reader, obj Foreign) (Change, error)
}

// Marks are the labels and annotations a plugin owns on a Foreign object,
// such as the labels the namespacemeta plugin puts on a Profile's
// namespace. Each key is the plugin's alone to set; the object's other keys
// are not touched.
type Marks struct {
	// Labels by key.
	Labels map[string]string
	// Annotations by key.
	Annotations map[string]string
}

// Foreign names an object that a plugin does not own but on which it owns
// single annotation or label keys, such as the default-editor
// ServiceAccount that the core plugin or the upstream controller makes:
// cloud identity plugins put their role annotation there. The plugin never
// creates, updates or deletes such an object, and never writes any other
// field of it.
type Foreign struct {
	// GVK is the object's kind.
	GVK schema.GroupVersionKind
	// Namespace and Name identify the object.
	Namespace string
	Name      string
}

// String renders the object as "ServiceAccount ns/name".
func (f Foreign) String() string { return fmt.Sprintf("%s %s/%s", f.GVK.Kind, f.Namespace, f.Name) }

// ForeignMissingError says that the object a plugin annotates does not exist
// (yet). It is not terminal: whoever makes the object will, and the plugin
// tries again.
type ForeignMissingError struct {
	// Object is the missing object.
	Object Foreign
}

// Error names the missing object and who makes it.
func (e *ForeignMissingError) Error() string {
	return fmt.Sprintf("%s does not exist yet; it is made by the core plugin or the upstream controller", e.Object)
}
