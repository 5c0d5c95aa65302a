package reconcilers_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/network"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestOwnWritesBringNoProfileBack creates Profiles whose network plugin
// writes eight policies each. The watch events of those writes must not
// bring the Profile back: a second pass would find the policies of the
// first not yet in the cache and send, for each, an apply refused as a
// Conflict and a read. Every policy is written once, and nothing is read.
func TestOwnWritesBringNoProfileBack(t *testing.T) {
	const profiles, policies = 20, 8
	var ps []string
	for i := range policies {
		ps = append(ps, fmt.Sprintf(`{"name":"p%d","podSelector":{},"policyTypes":["Ingress"],"ingress":[{"from":[{"podSelector":{"matchLabels":{"app":"a%d"}}}]}]}`, i, i))
	}
	counter := startWithStatusWriter(t, 0, reconcilers.DefaultStatusWait,
		testhost.Plugin{Def: network.Definition(), Options: []reconcilers.Option{
			reconcilers.WithEnabledForAll(nil),
			reconcilers.WithDefaults([]byte(`{"policies":[` + strings.Join(ps, ",") + `]}`)),
		}},
	)
	// The host's first list brings the network policies that earlier tests
	// left behind, and with them passes over their Profiles: count from
	// when those are done.
	settled := -1.0
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		time.Sleep(300 * time.Millisecond)
		n := testhost.Reconciles(t, network.Kind)
		done := n == settled
		settled = n
		return done, fmt.Sprintf("passes still going: %v", n)
	})
	before := settled
	prefix := "echo-" + rand.String(4)
	for i := range profiles {
		testhost.NewProfile(t, env.Client, fmt.Sprintf("%s-%d", prefix, i), nil)
	}
	for i := range profiles {
		testhost.WaitCondition(t, env.Client, fmt.Sprintf("%s-%d", prefix, i), "NetworkReady", plugins.ConditionTrue, "Applied")
	}
	time.Sleep(time.Second) // the last events, had they brought anything back
	applies, reads := 0, 0
	for i := range profiles {
		path := fmt.Sprintf("/apis/networking.k8s.io/v1/namespaces/%s-%d/networkpolicies", prefix, i)
		for j := range policies {
			applies += counter.Count("PATCH", fmt.Sprintf("%s/p%d", path, j))
			reads += counter.Count("GET", fmt.Sprintf("%s/p%d", path, j))
		}
	}
	passes := testhost.Reconciles(t, network.Kind) - before
	t.Logf("%d Profiles, %d policies: %d applies, %d reads, %.0f passes", profiles, profiles*policies, applies, reads, passes)
	if applies != profiles*policies {
		t.Errorf("%d applies of NetworkPolicies, want one per policy (%d): %d were refused and sent again", applies, profiles*policies, applies-profiles*policies)
	}
	if reads != 0 {
		t.Errorf("%d reads of NetworkPolicies, want none", reads)
	}
	// A pass for the Profile's creation and at most one more for the
	// namespace or a write whose answer came after its event.
	if passes > 2*profiles {
		t.Errorf("%.0f passes over %d Profiles, want at most 2 each: the plugin's own writes bring Profiles back", passes, profiles)
	}
}
