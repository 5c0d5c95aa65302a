package reconcilers_test

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/reconcilers"
)

// A host that serves no plugin of a Profile writes nothing onto it, not
// even a Ready condition, on its first pass or any resync: beside a running
// upstream controller, every write to a Profile makes that controller
// reconcile it again. Conditions the host wrote while it served a Profile
// (its plugin's and the Profile-level Ready, as an older host wrote them)
// go in one status write, and nothing follows.
func TestUnservedProfileGetsNoStatus(t *testing.T) {
	never := "unserved-" + rand.String(5)
	testhost.NewProfile(t, env.Client, never, nil)
	served := "unserved-was-" + rand.String(5)
	testhost.NewProfile(t, env.Client, served, nil)
	p := getProfile(t, served)
	p.Status.Conditions = []kubeflowv1.ProfileCondition{
		{Type: "Failed", Message: "upstream's, left alone"},
		{Type: "QuotasReady", Status: plugins.ConditionTrue, Message: "Applied: 1 object in sync"},
		{Type: plugins.ConditionReady, Status: plugins.ConditionTrue, Message: "PluginsReady: 0 plugins ready"},
	}
	if err := env.Client.Status().Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}

	// quotas serves only the Profiles that list it: neither does.
	h := testhost.Start(t, env, testhost.Plugin{Def: quotas.Definition(), Options: []reconcilers.Option{reconcilers.WithResync(300 * time.Millisecond)}})
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		conds := getProfile(t, served).Status.Conditions
		return len(conds) == 1 && conds[0].Type == "Failed", fmt.Sprintf("conditions %v", conds)
	})
	if got := h.Counter.Mutating("/profiles/" + served); len(got) != 1 {
		t.Errorf("requests to the Profile the host served before = %v, want one status write", got)
	}
	if got := h.Counter.Mutating("/profiles/" + never); len(got) != 0 {
		t.Errorf("requests to the Profile the host never served = %v, want none", got)
	}

	t.Run("resyncs write nothing", func(t *testing.T) {
		if got := h.ResyncWrites(t, 3, quotas.Kind); len(got) != 0 {
			t.Errorf("mutating requests on resync = %v, want none", got)
		}
		if conds := getProfile(t, never).Status.Conditions; len(conds) != 0 {
			t.Errorf("conditions of the Profile never served = %v, want none", conds)
		}
	})
}
