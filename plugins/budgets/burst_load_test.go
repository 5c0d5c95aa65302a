package budgets_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/budgets"
)

// burstFor is how long TestBurstLoad runs: a short sample by default (and
// under -short), the full run with -budgets.burst=3m.
var burstFor = flag.Duration("budgets.burst", 20*time.Second, "how long TestBurstLoad runs (3m for the full run)")

// The burst load: a budget of 4 CPUs over 5 members, 8 writers in each (40
// in all). A member alternates bursts of 1-2 s, in which each of its
// writers tries a pod of 100m-500m every 150 ms (about 53 pods/s a
// member), with rests of 1.5-3 s; a pod lives 100-600 ms, so the quota is
// recounted while pods are admitted (kubernetes/kubernetes#123434).
const (
	burstCPU     = 4000 // millicores
	burstMembers = 5
	burstWriters = 8 // per member
)

// burstStats are the figures of one run.
type burstStats struct {
	attempted, admitted, deleted atomic.Int64
	start                        time.Time

	mu sync.Mutex
	// perSecond counts attempts, admissions and deletions by second of
	// the run, for the burst rates.
	perSecond map[int64]*[3]int64
	// waits are the waits for headroom (see TestBurstLoad).
	waits []time.Duration

	samples int
	// sharesOver are the samples in which the shares summed past hard:
	// the only failure.
	sharesOver []string
	maxShares  int64
	// maxPods is the largest sum of the members' pods' requests; overPods
	// the samples in which it was past hard, and excess the stretches
	// during which it was.
	maxPods     int64
	overPods    int
	excess      []time.Duration
	overSince   time.Time
	pastOwn     int   // samples with a member's pods past its own quota
	maxOveruse  int64 // profilekit_budget_overuse, millicores
	unusedSum   float64
	ungrantSum  float64
	idleShares  float64
	lastSampled time.Time
}

func (s *burstStats) count(i int) {
	sec := int64(time.Since(s.start).Seconds())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perSecond[sec] == nil {
		s.perSecond[sec] = &[3]int64{}
	}
	s.perSecond[sec][i]++
}

// TestBurstLoad runs the burst load for -budgets.burst (20 s by default,
// also under -short; 3m for the full run), with one member leaving (its
// pods finished) at a third of the run and rejoining at two thirds, and the
// balancer restarted half-way. Every 100 ms it reads every member's quota
// in one list and then every pod. It fails only if the members' shares
// (each the larger of spec.hard and status.hard) sum past hard in a sample;
// the rest are figures: the largest sum of the members' pods' requests and
// how long any excess over hard lasted, the waits for headroom, and how
// much of the budget sat unused.
//
// A wait for headroom is, for one writer, from a refused pod to its next
// admitted pod, while the writer keeps trying every 150 ms (bursts end,
// but a writer that waits goes on trying until it gets a pod or the run
// ends). It includes waiting while the whole team is busy, not only for
// the balancer to move headroom.
func TestBurstLoad(t *testing.T) {
	d := *burstFor
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	team, name := uniqueName("burst"), uniqueName("burst")
	hard := corev1.ResourceList{corev1.ResourceRequestsCPU: *resource.NewMilliQuantity(burstCPU, resource.DecimalSI)}
	grant := corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("500m")}
	cfg := hostConfig(t, teamBudget(name, team, hard, grant))
	bal := startBalancer(t, cfg)
	c, err := client.New(restConfig(), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	st := &burstStats{perSecond: map[int64]*[3]int64{}}

	var members []string
	for range burstMembers {
		p := newMember(t, uniqueName("m"), team)
		waitShare(t, p.Name, name, corev1.ResourceRequestsCPU, "0")
		members = append(members, p.Name)
	}
	start := time.Now()
	st.start = start

	// paused stops a member's writers while it is out of the budget.
	paused := make([]atomic.Bool, burstMembers)
	var wg sync.WaitGroup
	for i, ns := range members {
		phase := &memberPhase{}
		wg.Add(1)
		go func() { defer wg.Done(); phase.run(ctx) }()
		lastEvent := &atomic.Int64{}
		for range burstWriters {
			wg.Add(1)
			go func() { defer wg.Done(); burstWriter(ctx, c, ns, phase, &paused[i], lastEvent, st) }()
		}
	}
	wg.Add(1)
	go func() { defer wg.Done(); sampleBurst(ctx, t, c, name, st) }()

	leaver := members[0]
	steps := []struct {
		at time.Duration
		do func()
	}{
		{d / 3, func() {
			paused[0].Store(true)
			time.Sleep(200 * time.Millisecond) // writers see the pause
			leave(t, c, leaver, func() {})
			t.Logf("%5.1fs: %s left the budget, its pods finished", time.Since(start).Seconds(), leaver)
		}},
		{d / 2, func() {
			bal.Stop()
			bal = startBalancer(t, cfg)
			t.Logf("%5.1fs: balancer restarted", time.Since(start).Seconds())
		}},
		{2 * d / 3, func() {
			testhost.UpdateProfile(t, env.Client, leaver, func(p *kubeflowv1.Profile) {
				if p.Labels == nil {
					p.Labels = map[string]string{}
				}
				p.Labels[labelTeam] = team
			})
			waitShare(t, leaver, name, corev1.ResourceRequestsCPU, "0")
			paused[0].Store(false)
			t.Logf("%5.1fs: %s rejoined the budget", time.Since(start).Seconds(), leaver)
		}},
	}
	for _, s := range steps {
		sleep(ctx, time.Until(start.Add(s.at)))
		if ctx.Err() != nil {
			break
		}
		s.do()
	}
	<-ctx.Done()
	wg.Wait()
	bal.Stop()
	reportBurst(t, d, st, name)
}

// memberPhase alternates a member's bursts and rests.
type memberPhase struct{ bursting atomic.Bool }

func (m *memberPhase) run(ctx context.Context) {
	sleep(ctx, rand.N(2*time.Second))
	for ctx.Err() == nil {
		m.bursting.Store(true)
		sleep(ctx, time.Second+rand.N(time.Second))
		m.bursting.Store(false)
		sleep(ctx, 1500*time.Millisecond+rand.N(1500*time.Millisecond))
	}
}

// burstWriter is one of a member's writers: during bursts, or while it
// waits for headroom, it tries a pod every 150 ms, and deletes each of its
// pods 100-600 ms after it was admitted. A refusal is recorded as a
// FailedCreate Event, as a workload controller does, at most every 300 ms
// per member.
func burstWriter(ctx context.Context, c client.Client, ns string, phase *memberPhase, paused *atomic.Bool, lastEvent *atomic.Int64, st *burstStats) {
	type live struct {
		pod  *corev1.Pod
		ends time.Time
	}
	var pods []live
	var waitStart time.Time
	del := func(all bool) {
		kept := pods[:0]
		for _, p := range pods {
			if all || time.Now().After(p.ends) {
				if err := c.Delete(context.WithoutCancel(ctx), p.pod); err == nil {
					st.deleted.Add(1)
					st.count(2)
				}
				continue
			}
			kept = append(kept, p)
		}
		pods = kept
	}
	defer del(true)
	for ctx.Err() == nil {
		sleep(ctx, 150*time.Millisecond)
		del(false)
		if paused.Load() {
			del(true)
			waitStart = time.Time{}
			continue
		}
		if !phase.bursting.Load() && waitStart.IsZero() {
			continue
		}
		cpu := 100 * (1 + rand.N(int64(5)))
		pod := burstPod(ns, cpu)
		st.attempted.Add(1)
		st.count(0)
		err := c.Create(ctx, pod)
		switch {
		case err == nil:
			st.admitted.Add(1)
			st.count(1)
			pods = append(pods, live{pod: pod, ends: time.Now().Add(100*time.Millisecond + rand.N(500*time.Millisecond))})
			if !waitStart.IsZero() {
				st.mu.Lock()
				st.waits = append(st.waits, time.Since(waitStart))
				st.mu.Unlock()
				waitStart = time.Time{}
			}
		case refused(err):
			if waitStart.IsZero() {
				waitStart = time.Now()
			}
			if last := lastEvent.Load(); time.Since(time.Unix(0, last)) > 300*time.Millisecond && lastEvent.CompareAndSwap(last, time.Now().UnixNano()) {
				_ = recordRefusal(ctx, c, ns, err)
			}
		}
	}
}

func burstPod(ns string, cpu int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("b-%d", podSeq.Add(1)), Labels: map[string]string{"budgets.test/pod": "yes"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: "example.org/train:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(cpu, resource.DecimalSI)}},
		}}},
	}
}

// sampleBurst reads, every 100 ms, the budget's quotas in one list and then
// every test pod, and records the figures.
func sampleBurst(ctx context.Context, t *testing.T, c client.Client, budget string, st *burstStats) {
	start := time.Now()
	for ctx.Err() == nil {
		next := time.Now().Add(100 * time.Millisecond)
		var quotas corev1.ResourceQuotaList
		var pods corev1.PodList
		if c.List(ctx, &quotas, client.MatchingLabels{budgets.LabelBudget: budget}) != nil ||
			c.List(ctx, &pods, client.MatchingLabels{"budgets.test/pod": "yes"}) != nil {
			sleep(ctx, time.Until(next))
			continue
		}
		now := time.Now()
		allowed := map[string]int64{}
		var shares, used int64
		for i := range quotas.Items {
			q := &quotas.Items[i]
			spec, enforced, u := q.Spec.Hard[corev1.ResourceRequestsCPU], q.Status.Hard[corev1.ResourceRequestsCPU], q.Status.Used[corev1.ResourceRequestsCPU]
			allowed[q.Namespace] = max(spec.MilliValue(), enforced.MilliValue())
			shares += allowed[q.Namespace]
			used += u.MilliValue()
		}
		podsOf := map[string]int64{}
		var sum int64
		for i := range pods.Items {
			p := &pods.Items[i]
			if _, member := allowed[p.Namespace]; member && p.DeletionTimestamp == nil {
				r := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
				podsOf[p.Namespace] += r.MilliValue()
				sum += r.MilliValue()
			}
		}
		overuse := int64(gauge(t, "profilekit_budget_overuse", budget) * 1000)
		st.mu.Lock()
		st.samples++
		at := now.Sub(start)
		st.maxShares = max(st.maxShares, shares)
		if shares > burstCPU {
			st.sharesOver = append(st.sharesOver, fmt.Sprintf("%.2fs: shares sum to %dm of %dm: %v", at.Seconds(), shares, burstCPU, allowed))
		}
		st.maxPods = max(st.maxPods, sum)
		st.maxOveruse = max(st.maxOveruse, overuse)
		switch {
		case sum > burstCPU:
			st.overPods++
			if st.overSince.IsZero() {
				st.overSince = now
			}
		case !st.overSince.IsZero():
			st.excess = append(st.excess, now.Sub(st.overSince))
			st.overSince = time.Time{}
		}
		for ns, have := range podsOf {
			if have > allowed[ns] {
				st.pastOwn++
				break
			}
		}
		st.unusedSum += float64(burstCPU-min(used, burstCPU)) / burstCPU
		st.ungrantSum += float64(burstCPU-min(shares, burstCPU)) / burstCPU
		st.idleShares += float64(max(shares-used, 0)) / burstCPU
		st.lastSampled = now
		st.mu.Unlock()
		sleep(ctx, time.Until(next))
	}
	st.mu.Lock()
	if !st.overSince.IsZero() {
		st.excess = append(st.excess, st.lastSampled.Sub(st.overSince))
	}
	st.mu.Unlock()
}

func reportBurst(t *testing.T, d time.Duration, st *burstStats, budget string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	var peak [3]int64
	burstSeconds := 0
	for _, n := range st.perSecond {
		for i := range peak {
			peak[i] = max(peak[i], n[i])
		}
		if n[0] >= 50 {
			burstSeconds++
		}
	}
	n := float64(max(st.samples, 1))
	maxExcess := time.Duration(0)
	for _, e := range st.excess {
		maxExcess = max(maxExcess, e)
	}
	t.Logf("burst load %s: %d writers in %d members, %d pods tried, %d admitted, %d deleted; per second at most %d tried, %d admitted, %d deleted; %d seconds with at least 50 pods tried",
		d, burstMembers*burstWriters, burstMembers, st.attempted.Load(), st.admitted.Load(), st.deleted.Load(), peak[0], peak[1], peak[2], burstSeconds)
	t.Logf("%d samples every 100ms: shares summed to at most %dm of %dm (%d samples past it)", st.samples, st.maxShares, burstCPU, len(st.sharesOver))
	t.Logf("pods' requests summed to at most %dm of %dm; past it in %d samples, %d stretches, the longest %s; samples with a member's pods past its own quota (kubernetes/kubernetes#123434): %d; largest profilekit_budget_overuse %dm; profilekit_budget_overadmitted_total %.1f CPU",
		st.maxPods, burstCPU, st.overPods, len(st.excess), maxExcess.Round(time.Millisecond), st.pastOwn, st.maxOveruse, gauge(t, "profilekit_budget_overadmitted_total", budget))
	t.Logf("%d waits for headroom (a refused pod to the writer's next admitted one): p50 %s, p99 %s, max %s",
		len(st.waits), percentile(st.waits, 0.5).Round(time.Millisecond), percentile(st.waits, 0.99).Round(time.Millisecond), percentile(st.waits, 1).Round(time.Millisecond))
	t.Logf("unused budget (hard less the members' use) %.1f%% on average; not granted (hard less the shares) %.1f%%; granted but unused (shares less use) %.1f%%",
		100*st.unusedSum/n, 100*st.ungrantSum/n, 100*st.idleShares/n)
	for i, o := range st.sharesOver {
		if i < 10 {
			t.Errorf("shares past the budget at %s", o)
		}
	}
	// One sample a second at least, as in TestLoadNeverOverspends: a
	// loaded machine samples less often than every 100 ms.
	if st.samples < int(d.Seconds()) || st.admitted.Load() < int64(d.Seconds()) {
		t.Errorf("only %d samples and %d pods admitted in %s: the load did not run", st.samples, st.admitted.Load(), d)
	}
}
