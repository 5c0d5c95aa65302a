package reconcilers_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/reconcilers"
)

// The host caches an owned kind as metadata only unless the plugin reads it
// whole (Definition.Reads). A plugin whose kind is cached so still puts back
// a body field edited by hand, and sends nothing when nothing changed.
func TestOwnedKindsAreCachedAsMetadataUnlessRead(t *testing.T) {
	reading := limitrange.Definition()
	reading.Reads = reading.Owns
	resync := []reconcilers.Option{reconcilers.WithResync(200 * time.Millisecond)}
	h := testhost.Start(t, env,
		testhost.Plugin{Def: quotas.Definition(), Options: resync},
		testhost.Plugin{Def: reading, Options: resync},
	)
	name := "meta-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil,
		entry(quotas.Kind, `{"hard":{"limits.cpu":"4"}}`),
		entry(limitrange.Kind, `{"container":{"default":{"cpu":"500m"}}}`))
	testhost.WaitCondition(t, env.Client, name, "QuotasReady", plugins.ConditionTrue, "")
	testhost.WaitCondition(t, env.Client, name, "LimitRangeReady", plugins.ConditionTrue, "")

	for _, c := range []struct {
		path                string
		wantWhole, wantMeta bool
	}{
		{"/api/v1/resourcequotas", false, true},
		{"/api/v1/limitranges", true, false},
	} {
		whole, meta := h.Counter.Reads(c.path)
		if (whole > 0) != c.wantWhole || (meta > 0) != c.wantMeta {
			t.Errorf("GET %s: %d whole-object and %d metadata-only requests; want whole %t, metadata only %t",
				c.path, whole, meta, c.wantWhole, c.wantMeta)
		}
	}

	// A hand edit of a field the quotas plugin owns moves the field to the
	// editor's manager; the plugin sees that in its managed fields alone.
	key := client.ObjectKey{Namespace: name, Name: quotas.DefaultName}
	var q corev1.ResourceQuota
	if err := env.Client.Get(t.Context(), key, &q); err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard[corev1.ResourceLimitsCPU] = resource.MustParse("8")
	if err := env.Client.Update(t.Context(), &q, client.FieldOwner("hand-edit")); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		if err := env.Client.Get(t.Context(), key, &q); err != nil {
			return false, err.Error()
		}
		got := q.Spec.Hard[corev1.ResourceLimitsCPU]
		return got.String() == "4", fmt.Sprintf("limits.cpu = %s, want 4 put back", got.String())
	})

	if got := h.ResyncWrites(t, 3, quotas.Kind, limitrange.Kind); len(got) != 0 {
		t.Errorf("mutating requests during resync = %v, want none", got)
	}
}
