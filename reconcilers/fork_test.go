package reconcilers_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/reconcilers"
)

type forkAdapter = reconcilers.Adapter[*ProfileReconciler, *kubeflowv1.Profile]

func newForkAdapter(def plugins.Definition) *forkAdapter {
	return reconcilers.NewAdapter[*ProfileReconciler, *kubeflowv1.Profile](def)
}

// The compiler checks that a Fork is an upstream Plugin.
var _ Plugin = (*reconcilers.Fork[*ProfileReconciler, *kubeflowv1.Profile])(nil)

func TestNewForkRefuses(t *testing.T) {
	withSpec := newForkAdapter(limitrange.Definition())
	if err := json.Unmarshal([]byte(`{}`), withSpec); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		reason   string
		adapters []*forkAdapter
		want     string
	}{
		{"two adapters of one kind would apply it twice", []*forkAdapter{newForkAdapter(quotas.Definition()), newForkAdapter(quotas.Definition())}, "two adapters for plugin quotas"},
		{"an adapter with a spec would apply it to every Profile", []*forkAdapter{withSpec}, "holds a spec"},
		{"a nil adapter", []*forkAdapter{nil}, "nil adapter"},
	}
	for _, c := range cases {
		_, err := reconcilers.NewFork(c.adapters...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: NewFork error = %v, want one containing %q", c.reason, err, c.want)
		}
	}
	f, err := reconcilers.NewFork(newForkAdapter(quotas.Definition()), newForkAdapter(limitrange.Definition()))
	if err != nil {
		t.Fatal(err)
	}
	for kind, want := range map[string]bool{quotas.Kind: true, limitrange.Kind: true, "WorkloadIdentity": false} {
		if got := f.Serves(kind); got != want {
			t.Errorf("Serves(%s) = %v, want %v", kind, got, want)
		}
	}
}

// A nil Fork, as upstream's own tests have it, does nothing.
func TestNilForkDoesNothing(t *testing.T) {
	var f *reconcilers.Fork[*ProfileReconciler, *kubeflowv1.Profile]
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	if err := f.ApplyPlugin(nil, p); err != nil {
		t.Errorf("ApplyPlugin: %v", err)
	}
	if err := f.RevokePlugin(nil, p); err != nil {
		t.Errorf("RevokePlugin: %v", err)
	}
	if f.Serves(quotas.Kind) {
		t.Error("a nil Fork serves quotas")
	}
}

func TestForkCacheOptions(t *testing.T) {
	cases := []struct {
		reason string
		except []client.Object
		want   []string
	}{
		{"ResourceQuota is upstream's too (kf-resource-quota), so it stays whole", nil, []string{"ConfigMap", "LimitRange"}},
		{"a kind the fork reads itself stays whole", []client.Object{&corev1.ConfigMap{}}, []string{"LimitRange"}},
	}
	for _, c := range cases {
		base := cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Secret{}: {}}}
		opts, err := reconcilers.ForkCacheOptions(base, c.except, quotas.Definition(), limitrange.Definition())
		if err != nil {
			t.Fatal(err)
		}
		var restricted []string
		for obj, by := range opts.ByObject {
			if _, ok := obj.(*metav1.PartialObjectMetadata); !ok {
				continue
			}
			kind := obj.GetObjectKind().GroupVersionKind().Kind
			if by.Label.String() != plugins.ManagedSelector().String() {
				t.Errorf("%s: %s cached for %q, want our label %q", c.reason, kind, by.Label, plugins.ManagedSelector())
			}
			restricted = append(restricted, kind)
		}
		slices.Sort(restricted)
		if diff := cmp.Diff(c.want, restricted); diff != "" {
			t.Errorf("%s: kinds cached for our label only (-want +got):\n%s", c.reason, diff)
		}
		if len(opts.ByObject) != len(c.want)+1 {
			t.Errorf("%s: ByObject = %v, want the fork's Secret entry kept beside ours", c.reason, opts.ByObject)
		}
		if len(base.ByObject) != 1 {
			t.Errorf("%s: the options passed in were changed: %v", c.reason, base.ByObject)
		}
	}
}
