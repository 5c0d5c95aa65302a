package budgets_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins/budgets"
)

// TestThousandMembersGetFirstShares makes 1,000 member Profiles (200 with
// -short) of a budget of one CPU each, then starts the balancer, which
// creates their quotas and gives each its first share once the quota
// controller has filled every quota in. It reports the time and the
// requests: about one create and one raise per member.
func TestThousandMembersGetFirstShares(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 200
	}
	ctx := t.Context()
	team, name := uniqueName("scale"), uniqueName("scale")
	c, err := client.New(restConfig(), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	names := make(chan string, n)
	for i := range n {
		names <- fmt.Sprintf("%s-%04d", team, i)
	}
	close(names)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range 8 {
		wg.Go(func() {
			for ns := range names {
				if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
					errs <- err
				}
				p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{labelTeam: team}}}
				if err := c.Create(ctx, p); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("create members: %v", err)
	}

	grant := corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1")}
	start := time.Now()
	bal := startBalancer(t, hostConfig(t, teamBudget(name, team, cpu(fmt.Sprint(n)), grant)))
	eventually(t, 3*time.Minute, func() (bool, string) {
		var quotas corev1.ResourceQuotaList
		if err := env.Client.List(ctx, &quotas, client.MatchingLabels{budgets.LabelBudget: name}); err != nil {
			return false, err.Error()
		}
		shared := 0
		for _, q := range quotas.Items {
			if share := q.Spec.Hard[corev1.ResourceRequestsCPU]; share.Cmp(grant[corev1.ResourceRequestsCPU]) == 0 {
				shared++
			}
		}
		return shared == n, fmt.Sprintf("%d quotas, %d with a first share, of %d members", len(quotas.Items), shared, n)
	})
	elapsed := time.Since(start)
	bal.Stop()
	mutating := bal.counter.Mutating()
	byVerb := map[string]int{}
	for _, r := range mutating {
		verb, _, _ := strings.Cut(r, " ")
		byVerb[verb]++
	}
	t.Logf("%d members got first shares in %s with %s (%d mutating: %v) at 200 QPS",
		n, elapsed.Round(100*time.Millisecond), bal.counter, len(mutating), byVerb)
	if byVerb["POST"] != n || byVerb["PATCH"] != n {
		t.Errorf("%d creates and %d raises for %d members, want one each", byVerb["POST"], byVerb["PATCH"], n)
	}
}

// BenchmarkRebalance moves headroom back and forth between two members of
// a budget of 2 CPUs and reports the balancer's requests per move. Each
// iteration is two moves: a refused workload in one member takes the
// other's unused CPU (lower, wait, fresh list, raise), and once its pods
// finish the other gets its CPU back.
func BenchmarkRebalance(b *testing.B) {
	ctx := b.Context()
	team, name := uniqueName("bench"), uniqueName("bench")
	grant := corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1")}
	bal := startBalancer(b, hostConfig(b, teamBudget(name, team, cpu("2"), grant)), budgets.WithQuietPeriod(100*time.Millisecond))
	members := []string{newMember(b, uniqueName("a"), team).Name, newMember(b, uniqueName("b"), team).Name}
	for _, m := range members {
		waitShare(b, m, name, corev1.ResourceRequestsCPU, "1")
	}
	bal.counter.Reset()
	moves := 0
	b.ResetTimer()
	for i := range b.N {
		x, y := members[i%2], members[(i+1)%2]
		askForMore(b, x)
		waitShare(b, x, name, corev1.ResourceRequestsCPU, "2")
		waitShare(b, y, name, corev1.ResourceRequestsCPU, "0")
		if err := env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(x)); err != nil {
			b.Fatal(err)
		}
		waitShare(b, x, name, corev1.ResourceRequestsCPU, "1")
		waitShare(b, y, name, corev1.ResourceRequestsCPU, "1")
		moves += 2
	}
	b.StopTimer()
	total := countRequests(bal.counter)
	b.ReportMetric(float64(total)/float64(moves), "requests/move")
	b.ReportMetric(float64(len(bal.counter.Mutating()))/float64(moves), "writes/move")
	b.ReportMetric(0, "ns/op")
	if b.N == 1 || testing.Verbose() {
		b.Logf("%d moves: %s, mutating %v", moves, bal.counter, bal.counter.Mutating())
	}
}

// countRequests is how many requests the counter holds.
func countRequests(c interface{ String() string }) int {
	var n int
	if _, err := fmt.Sscanf(c.String(), "%d requests", &n); err != nil {
		return -1
	}
	return n
}
