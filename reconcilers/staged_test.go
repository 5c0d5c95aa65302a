package reconcilers_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/reconcilers"
)

// chooser is a Staged whose candidates the test names.
type chooser struct {
	mu         sync.Mutex
	candidates map[string]bool
	// seen are the observations, as "<kind> <profile> candidate=<bool> <status>".
	seen  map[string]bool
	wakes []chan event.GenericEvent
}

func (c *chooser) Candidate(p *kubeflowv1.Profile) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.candidates[p.Name]
}

func (c *chooser) Observe(kind string, p *kubeflowv1.Profile, candidate bool, cond *kubeflowv1.ProfileCondition) {
	status := "removed"
	if cond != nil {
		status = cond.Status
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[fmt.Sprintf("%s %s candidate=%v %s", kind, p.Name, candidate, status)] = true
}

func (c *chooser) Wakes() <-chan event.GenericEvent {
	ch := make(chan event.GenericEvent, 16)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wakes = append(c.wakes, ch)
	return ch
}

func (c *chooser) seenIt(s string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[s]
}

// promote gives name the candidate settings and wakes the reconcilers.
func (c *chooser) promote(name string) {
	c.mu.Lock()
	c.candidates[name] = true
	wakes := c.wakes
	c.mu.Unlock()
	for _, ch := range wakes {
		ch <- event.GenericEvent{Object: &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}}}
	}
}

// TestStagedServesEachProfileItsSettings runs quotas with changed defaults
// and limitrange turned off in the candidate settings: a Profile the
// chooser promotes, and only that one, gets the new quota and loses its
// limit range, and the chooser hears how its passes ended.
func TestStagedServesEachProfileItsSettings(t *testing.T) {
	c := &chooser{candidates: map[string]bool{}, seen: map[string]bool{}}
	all := reconcilers.Settings{EnabledForAll: true}
	qStable, qCandidate := all, all
	qStable.Defaults = []byte(`{"hard":{"limits.cpu":"2"}}`)
	qCandidate.Defaults = []byte(`{"hard":{"limits.cpu":"4"}}`)
	lStable := all
	lStable.Defaults = []byte(`{"container":{"default":{"cpu":"1"}}}`)
	testhost.Start(t, env,
		testhost.Plugin{Def: quotas.Definition(), Options: []reconcilers.Option{reconcilers.WithStaged(qStable, qCandidate, c)}},
		testhost.Plugin{Def: limitrange.Definition(), Options: []reconcilers.Option{
			reconcilers.WithDefaults(lStable.Defaults), reconcilers.WithStaged(lStable, reconcilers.Settings{Off: true}, c)}},
	)
	a, b := "staged-a-"+rand.String(5), "staged-b-"+rand.String(5)
	testhost.NewProfile(t, env.Client, a, nil)
	testhost.NewProfile(t, env.Client, b, nil)
	cpu := func(ns string) string {
		var list corev1.ResourceQuotaList
		if err := env.Client.List(t.Context(), &list, client.InNamespace(ns)); err != nil || len(list.Items) != 1 {
			return fmt.Sprintf("%d quotas, %v", len(list.Items), err)
		}
		q := list.Items[0].Spec.Hard[corev1.ResourceLimitsCPU]
		return q.String()
	}
	limitRanges := func(ns string) int {
		var list corev1.LimitRangeList
		if err := env.Client.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		return cpu(a) == "2" && cpu(b) == "2" && limitRanges(a) == 1 && limitRanges(b) == 1,
			fmt.Sprintf("limits.cpu %s %s, limit ranges %d %d", cpu(a), cpu(b), limitRanges(a), limitRanges(b))
	})
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		want := "quotas " + a + " candidate=false True"
		return c.seenIt(want), "waiting for " + want
	})

	c.promote(a)
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		return cpu(a) == "4" && limitRanges(a) == 0, fmt.Sprintf("promoted: limits.cpu %s, limit ranges %d", cpu(a), limitRanges(a))
	})
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		for _, want := range []string{"quotas " + a + " candidate=true True", "limitrange " + a + " candidate=true removed"} {
			if !c.seenIt(want) {
				return false, "waiting for " + want
			}
		}
		return true, ""
	})
	p := getProfile(t, a)
	if cond := plugins.FindCondition(p.Status.Conditions, limitrange.Definition().Condition()); cond != nil {
		t.Errorf("the candidate turned limitrange off, its condition stays: %+v", cond)
	}
	if cpu(b) != "2" || limitRanges(b) != 1 {
		t.Errorf("Profile %s was not promoted, but has limits.cpu %s and %d limit ranges", b, cpu(b), limitRanges(b))
	}
}
