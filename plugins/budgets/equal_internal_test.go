package budgets

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestEqualLists: two lists of quantities are equal when they name the same
// resources with the same amounts, however each amount is written; a list
// that holds only some of the other's resources is not equal to it, in
// either order.
func TestEqualLists(t *testing.T) {
	list := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	for _, c := range []struct {
		reason string
		a, b   corev1.ResourceList
		want   bool
	}{
		{"the same", list("requests.cpu", "2", "requests.memory", "1Gi"), list("requests.cpu", "2", "requests.memory", "1Gi"), true},
		{"the same amount written otherwise", list("requests.cpu", "2"), list("requests.cpu", "2000m"), true},
		{"both empty", list(), nil, true},
		{"another amount", list("requests.cpu", "2"), list("requests.cpu", "3"), false},
		{"another resource of the same count", list("requests.cpu", "2"), list("limits.cpu", "2"), false},
		{"fewer resources", list("requests.cpu", "2"), list("requests.cpu", "2", "requests.memory", "1Gi"), false},
		{"more resources", list("requests.cpu", "2", "requests.memory", "1Gi"), list("requests.cpu", "2"), false},
	} {
		if got := equalLists(c.a, c.b); got != c.want {
			t.Errorf("%s: equalLists(%v, %v) = %v, want %v", c.reason, c.a, c.b, got, c.want)
		}
	}
}
