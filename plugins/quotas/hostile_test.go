package quotas_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/quotas"
)

// TestManyInvalidResourceNames gives a Profile 50,000 hard limits the API
// server would refuse in a ResourceQuota. The plugin refuses the spec before
// it sends any request for the quota, and the condition and the Event carry
// the first problems and a count of the rest, within their bounds.
func TestManyInvalidResourceNames(t *testing.T) {
	h := testhost.Start(t, env, testhost.Plugin{Def: quotas.Definition()})
	hard := make(map[string]string, 50000)
	for i := range 50000 {
		hard[fmt.Sprintf("bad_%05d", i)] = "1"
	}
	raw, err := json.Marshal(map[string]any{"hard": hard})
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueName("hostile")
	h.Counter.Reset()
	start := time.Now()
	testhost.NewProfile(t, env.Client, name, nil, kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: quotas.Kind}, Spec: &runtime.RawExtension{Raw: raw}})
	// Decoding 50,000 quantities takes a while under the race detector, so
	// this waits longer than testhost.WaitCondition does.
	var cond kubeflowv1.ProfileCondition
	testhost.Eventually(t, 90*time.Second, func() (bool, string) {
		var p kubeflowv1.Profile
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			return false, err.Error()
		}
		c := plugins.FindCondition(p.Status.Conditions, condType)
		if c == nil || c.Status != plugins.ConditionFalse || !strings.Contains(c.Message, "(and 49995 more problems)") {
			return false, fmt.Sprintf("conditions %+v", p.Status.Conditions)
		}
		cond = *c
		return true, ""
	})
	t.Logf("condition after %s (%d bytes):\n%s", time.Since(start).Round(time.Millisecond), len(cond.Message), cond.Message)
	if !strings.HasPrefix(cond.Message, "InvalidSpec: spec.plugins[0] (quotas).spec: hard[bad_00000]: not a resource a quota can limit") {
		t.Errorf("condition message does not name the field and value first:\n%s", cond.Message)
	}
	if len(cond.Message) > plugins.MaxMessageBytes+len("InvalidSpec: ") {
		t.Errorf("condition message of %d bytes", len(cond.Message))
	}
	if got := h.Counter.Mutating("resourcequotas"); len(got) != 0 {
		t.Errorf("requests for the quota: %v, want none", got)
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		var evs eventsv1.EventList
		if err := env.Client.List(t.Context(), &evs); err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == name && e.Reason == plugins.ReasonInvalidSpec && e.Type == corev1.EventTypeWarning {
				if len(e.Note) > 1024 || !strings.Contains(e.Note, "(and 49995 more problems)") {
					return false, fmt.Sprintf("event note of %d bytes: %s", len(e.Note), e.Note)
				}
				return true, ""
			}
		}
		return false, "no InvalidSpec event"
	})
}
