package plugintest

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
)

// ownScheme returns a new scheme that knows every kind s knows, for a fake
// client that stands for a stale or blind view. The fake client registers
// each unstructured or metadata-only kind it is handed in the scheme it is
// given, as an empty object of that Go type; handed s, the test's scheme,
// which the test's hosts share, it would make a host made later build its
// watches from objects without a kind.
func ownScheme(s *runtime.Scheme) *runtime.Scheme {
	out := runtime.NewScheme()
	for gvk, t := range s.AllKnownTypes() {
		if obj, ok := reflect.New(t).Interface().(runtime.Object); ok {
			out.AddKnownTypeWithName(gvk, obj)
		}
	}
	return out
}
