package budgets_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/budgets"
)

// The load: a budget of 6 CPUs and 40 pods over 5 members whose workloads
// create pods of 100m or 300m as fast as the API server admits them, in
// bursts, and between bursts finish (delete) about half of their pods and
// rest.
// Members join and leave every few seconds, and the balancer restarts once,
// half-way. Against the broken order, an adversary also spends what the
// other members' quotas admit whenever one member's share rises (see
// adversary). A sampler reads, about every 20 ms, every member's quota and
// then every pod in one consistent list, and sums the CPU of the members'
// pods.
const (
	loadCPU     = 6000 // millicores
	loadPods    = 40
	loadMembers = 5
)

// loadHard is the load's budget: 6 CPUs and 40 pods. Members alternate pods
// of 100m and 300m, so that some run out of pods with CPU to spare and
// others out of CPU: a move often lowers a member's CPU while it raises its
// pods.
var loadHard = corev1.ResourceList{
	corev1.ResourceRequestsCPU:        *resource.NewMilliQuantity(loadCPU, resource.DecimalSI),
	corev1.ResourceName("count/pods"): *resource.NewQuantity(loadPods, resource.DecimalSI),
}

// loadGrant moves 600m of CPU and 2 pods at a time: a member of 100m pods
// runs out of pods with CPU to spare, and gives that CPU to a member of
// 300m pods while it gets pods.
var loadGrant = corev1.ResourceList{
	corev1.ResourceRequestsCPU:        resource.MustParse("600m"),
	corev1.ResourceName("count/pods"): resource.MustParse("2"),
}

type loadResult struct {
	admitted atomic.Int64
	// spent is how many of the admitted pods the adversary made.
	spent      atomic.Int64
	samples    int
	maxSum     int64 // millicores
	maxPods    int64
	overspends []string
	firstOver  time.Duration
	// podsOver is the first sample in which the members' pods requested
	// more than the budget, whoever let them in.
	podsOver string
	// raced are the samples in which the members' pods were past the
	// budget while their quotas allowed no more than it: the API server
	// admitted pods past a member's quota (kubernetes/kubernetes#123434).
	raced []string
	// waits are how long refused workloads waited for headroom that
	// another member had (slack) when they were refused.
	waits []time.Duration
	// waiting holds the refused workloads by namespace.
	waiting map[string]wait
	// idle are the stretches during which a refused workload waited while
	// another member held slack, each ended by the workload getting
	// headroom or the slack going (used, or given to another).
	idle []time.Duration
	// late are the stretches longer than headroomTarget.
	late   []string
	joins  int
	leaves int
	mu     sync.Mutex
}

// runLoad runs the load for d with a balancer of opts, with the adversary
// when withAdversary is set, and stops early at the first overspend when
// stopAtOverspend is set.
func runLoad(t *testing.T, d time.Duration, stopAtOverspend, withAdversary bool, opts ...budgets.Option) *loadResult {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	team, name := uniqueName("load"), uniqueName("load")
	cfg := hostConfig(t, teamBudget(name, team, loadHard, loadGrant))
	bal := startBalancer(t, cfg, opts...)
	c, err := client.New(restConfig(), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	res := &loadResult{waiting: map[string]wait{}}
	s := &sampler{c: c, budget: name, start: time.Now()}
	var wg sync.WaitGroup
	members := map[string]context.CancelFunc{}
	join := func(prefix string) string {
		p := newMember(t, uniqueName(prefix), team)
		// A namespace is not bound until the quota controller has
		// filled in its quota's status (see doc.go): its workloads
		// start then.
		waitShare(t, p.Name, name, corev1.ResourceRequestsCPU, "0")
		mctx, stop := context.WithCancel(ctx)
		members[p.Name] = stop
		podCPU := []int64{100, 300}[len(members)%2]
		wg.Add(1)
		go func() { defer wg.Done(); workload(mctx, c, p.Name, podCPU, s, res) }()
		return p.Name
	}
	for range loadMembers {
		join("m")
	}
	if withAdversary {
		wg.Add(1)
		go func() { defer wg.Done(); adversary(ctx, c, name, res) }()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.run(ctx, res, func() {
			if stopAtOverspend {
				cancel()
			}
		})
	}()

	// Members join and leave, and the balancer restarts once.
	var churn []string
	restarted := false
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(4 * time.Second):
		}
		if ctx.Err() != nil {
			break
		}
		if !restarted && time.Since(s.start) > d/2 {
			bal.Stop()
			bal = startBalancer(t, cfg, opts...)
			restarted = true
			t.Logf("%5.1fs: balancer restarted", time.Since(s.start).Seconds())
		}
		churn = append(churn, join("j"))
		res.joins++
		if len(churn) > 1 {
			leave(t, c, churn[0], members[churn[0]])
			churn = churn[1:]
			res.leaves++
		}
	}
	cancel()
	wg.Wait()
	return res
}

// leave stops a member's workload, finishes its pods and takes it out of
// the team.
func leave(t *testing.T, c client.Client, ns string, stop context.CancelFunc) {
	stop()
	ctx := context.WithoutCancel(t.Context())
	if err := c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns)); err != nil {
		t.Errorf("delete pods of %s: %v", ns, err)
	}
	testhost.UpdateProfile(t, env.Client, ns, func(p *kubeflowv1.Profile) { delete(p.Labels, labelTeam) })
}

// workload creates pods in ns in bursts of 0.3-1.5 s until ctx ends; a
// burst refused for lack of headroom goes on until it gets some, for up to
// 6 s. A refused pod is recorded as a FailedCreate Event, as a workload
// controller does, at most every 300 ms. Between bursts about half of the
// pods finish and the workload rests 1-1.3 s, a little longer than the
// quiet period: members often give headroom and want it back a moment
// later, as bursty workloads do.
func workload(ctx context.Context, c client.Client, ns string, podCPU int64, s *sampler, res *loadResult) {
	size := resource.NewMilliQuantity(podCPU, resource.DecimalSI).String()
	for ctx.Err() == nil {
		busyUntil := time.Now().Add(300*time.Millisecond + rand.N(1200*time.Millisecond))
		var waitStart, lastEvent time.Time
		slack, why := false, ""
		for ctx.Err() == nil && (time.Now().Before(busyUntil) || !waitStart.IsZero() && time.Since(waitStart) < 6*time.Second) {
			err := createPod(ctx, c, ns, size)
			switch {
			case err == nil:
				res.admitted.Add(1)
				res.mu.Lock()
				if !waitStart.IsZero() && slack {
					res.waits = append(res.waits, time.Since(waitStart))
				}
				delete(res.waiting, ns)
				res.mu.Unlock()
				waitStart = time.Time{}
			case refused(err):
				if waitStart.IsZero() {
					waitStart = time.Now()
					w := wait{since: waitStart, resources: exceeded(err), podCPU: podCPU}
					slack, why = s.slackBesides(ns, w)
					res.mu.Lock()
					res.waiting[ns] = w
					res.mu.Unlock()
				}
				if time.Since(lastEvent) > 300*time.Millisecond {
					_ = recordRefusal(ctx, c, ns, err)
					lastEvent = time.Now()
				}
				sleep(ctx, 10*time.Millisecond)
			default:
				sleep(ctx, 10*time.Millisecond)
			}
		}
		_ = why
		res.mu.Lock()
		delete(res.waiting, ns)
		res.mu.Unlock()
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns)); err == nil {
			for i := range pods.Items {
				if rand.N(2) == 0 {
					_ = c.Delete(ctx, &pods.Items[i])
				}
			}
		}
		sleep(ctx, time.Second+rand.N(300*time.Millisecond))
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// TestLoadNeverOverspends runs the load for 45 s (15 s with -short): the
// members' quotas never allow more than the budget at any sample (what the
// balancer promises), nor do their pods request more, unless the API
// server admitted pods past a member's own quota while the quotas allowed
// no more than the budget (kubernetes/kubernetes#123434: reported, not the
// balancer's); and a
// refused workload that waits while another member holds slack the
// balancer may move (something free, or headroom of a pod or more in a
// member whose use has not changed for the quiet period) gets headroom, or
// sees the slack used or given to another workload, within
// headroomTarget; the test reports how often it took longer.
func TestLoadNeverOverspends(t *testing.T) {
	d := 45 * time.Second
	if testing.Short() {
		d = 15 * time.Second
	}
	res := runLoad(t, d, false, false)
	p50, p99 := percentile(res.idle, 0.5), percentile(res.idle, 0.99)
	t.Logf("%d pods admitted (%d by the adversary), %d samples, max sums %dm of %dm CPU and %d of %d pods, %d joins, %d leaves", res.admitted.Load(), res.spent.Load(), res.samples, res.maxSum, loadCPU, res.maxPods, loadPods, res.joins, res.leaves)
	t.Logf("%d stretches of a refused workload waiting while another member held slack: p50 %s, p99 %s, max %s; %d over %s",
		len(res.idle), p50.Round(time.Millisecond), p99.Round(time.Millisecond), percentile(res.idle, 1).Round(time.Millisecond), len(res.late), headroomTarget)
	t.Logf("%d refusals with slack elsewhere, refusal to next admitted pod: p50 %s, p99 %s, max %s", len(res.waits),
		percentile(res.waits, 0.5).Round(time.Millisecond), percentile(res.waits, 0.99).Round(time.Millisecond), percentile(res.waits, 1).Round(time.Millisecond))
	for _, o := range res.overspends {
		t.Errorf("overspend at %s", o)
	}
	if len(res.raced) > 0 {
		t.Logf("%d samples in which the API server had admitted pods past a member's own quota (kubernetes/kubernetes#123434; the quotas allowed no more than the budget), first %s", len(res.raced), res.raced[0])
	}
	// The sampler aims at 10 samples a second; on a loaded two-core
	// machine under the race detector it reads every quota and pod less
	// often, down to about 3 a second. One a second still sees the load
	// (TestLoadBrokenOrderOverspends shows the sampler catches an
	// overspend at that pace).
	if secs := int64(d.Seconds()); res.admitted.Load() < 2*secs || res.samples < int(secs) {
		t.Errorf("only %d pods admitted over %d samples: the load did not run", res.admitted.Load(), res.samples)
	}
	if len(res.waits) < 5 || len(res.idle) < 5 {
		t.Errorf("only %d waits for headroom, %d with slack elsewhere: the test did not see headroom move", len(res.waits), len(res.idle))
	}
	// How soon headroom moves is a figure, reported against its target:
	// a test on a shared machine must not fail because one stretch took
	// a little longer. A balancer that stopped moving headroom, whose
	// stretches would all end only when the workloads give up (6 s), is
	// caught: at most one stretch in ten may miss the target.
	for _, l := range res.late {
		t.Logf("over %s: %s", headroomTarget, l)
	}
	if len(res.late)*10 > len(res.idle) {
		t.Errorf("%d of %d stretches of a refused workload beside slack lasted over %s: headroom does not move", len(res.late), len(res.idle), headroomTarget)
	}
}

// headroomTarget is how soon a refused workload should get the headroom
// another member leaves unused.
const headroomTarget = 5 * time.Second

// TestLoadBrokenOrderOverspends runs the same load against a balancer that
// raises receivers before it lowers donors: the sampler must see the
// quotas allow more than the budget and the team spend more than it, or
// the test above could not see either.
func TestLoadBrokenOrderOverspends(t *testing.T) {
	// A run stops once the pods request more than the budget: the
	// adversary spends a donor's share between a receiver's raise and the
	// donor's lowering. -short does not shorten it.
	d := 150 * time.Second
	res := runLoad(t, d, true, true, budgets.WithRaiseFirst())
	first := "none"
	if len(res.overspends) > 0 {
		first = res.overspends[0]
	}
	t.Logf("broken order: %d pods admitted (%d by the adversary), max sums %dm of %dm CPU and %d of %d pods; quotas past the budget first after %s (%s); pods past it: %s",
		res.admitted.Load(), res.spent.Load(), res.maxSum, loadCPU, res.maxPods, loadPods, res.firstOver.Round(time.Millisecond), first, res.podsOver)
	if len(res.overspends) == 0 || res.podsOver == "" {
		t.Errorf("raising before lowering did not overspend within %s: the load test cannot see an overspend", d)
	}
}
