package reconcilers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// own gives a pass a Profile whose maps and slices are its own: what it
// then writes does not reach the cache's Profile it read.
func TestOwnCopiesTheCachesProfile(t *testing.T) {
	cached := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "1"}, Finalizers: make([]string, 0, 4)}}
	p := *cached // as a Get without a copy gives it
	own(&p)
	p.Labels["a"] = "2"
	p.Finalizers = append(p.Finalizers, "profilekit.dev/demo")
	// The cache's finalizers have room for more: an append to a slice that
	// shares their array would write into it.
	if spare := cached.Finalizers[:1]; cached.Labels["a"] != "1" || spare[0] != "" {
		t.Errorf("a write after own reached the cache's Profile: labels %v, finalizers' array %q", cached.Labels, spare)
	}
}
