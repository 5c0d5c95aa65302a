package budgets_test

// This file holds the package's TestMain, a kube-apiserver with
// kube-controller-manager's quota controller, and the helpers the tests
// share: budgets' members, a balancer to start and stop, pods to create.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/budgets"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{ExtraControllers: []string{"resourcequota-controller"}})
}

// labelTeam marks the members of a test's budget.
const labelTeam = "budgets.test/team"

// uniqueName returns prefix with a random suffix: a Profile or budget name
// of its own for each test.
func uniqueName(prefix string) string { return prefix + "-" + rand.String(5) }

func profileWithSpec(name, spec string) *kubeflowv1.Profile {
	return &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kubeflowv1.ProfileSpec{Plugins: []kubeflowv1.Plugin{{
			TypeMeta: metav1.TypeMeta{Kind: budgets.Kind},
			Spec:     &runtime.RawExtension{Raw: []byte(spec)},
		}}},
	}
}

// hostConfig decodes a host configuration of budgets as a host does.
func hostConfig(t testing.TB, bs ...budgets.Budget) *budgets.Config {
	t.Helper()
	raw, err := json.Marshal(budgets.Config{Budgets: bs})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := budgets.Definition().DecodeHostDefaults(raw)
	if err != nil {
		t.Fatalf("host config: %v", err)
	}
	return cfg.(*budgets.Config)
}

// teamBudget is a budget over the Profiles labelled team.
func teamBudget(name, team string, hard, grant corev1.ResourceList) budgets.Budget {
	return budgets.Budget{
		Name:            name,
		ProfileSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelTeam: team}},
		Hard:            hard, Grant: grant,
	}
}

func cpu(s string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(s)}
}

// balancer is a running Runner of a budgets Definition.
type balancer struct {
	stop    context.CancelFunc
	done    chan error
	counter *testenv.Counter
}

// startBalancer runs the Definition's Runner with cfg, as a host does, with
// a client of 200 QPS whose requests it counts, until stopped or the test
// ends.
func startBalancer(t testing.TB, cfg *budgets.Config, opts ...budgets.Option) *balancer {
	t.Helper()
	def := budgets.Definition(opts...)
	counter := &testenv.Counter{}
	rc := counter.Counting(env.Config)
	rc.QPS, rc.Burst = 200, 200
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	if v := os.Getenv("BUDGETS_LOG"); v != "" {
		level, _ := strconv.Atoi(v)
		ctx = log.IntoContext(ctx, zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.Level(-level))))
	}
	b := &balancer{stop: cancel, done: make(chan error, 1), counter: counter}
	go func() {
		b.done <- def.Runner(ctx, plugins.Runtime{Config: cfg, RESTConfig: rc, Reader: env.Client})
	}()
	t.Cleanup(b.Stop)
	return b
}

// Stop stops the balancer and waits for it to return.
func (b *balancer) Stop() {
	if b.stop == nil {
		return
	}
	b.stop()
	b.stop = nil
	<-b.done
}

// newMember creates a namespace and a Profile labelled as a member of team.
func newMember(t testing.TB, name, team string) *kubeflowv1.Profile {
	t.Helper()
	return testhost.NewProfile(asTest(t), env.Client, name, map[string]string{labelTeam: team})
}

// asTest lets benchmarks use the testhost helpers that take a *testing.T.
func asTest(t testing.TB) *testing.T {
	if tt, ok := t.(*testing.T); ok {
		return tt
	}
	return &testing.T{}
}

// quota reads a member's budget quota from the API server.
func quota(ctx context.Context, ns, budget string) (*corev1.ResourceQuota, error) {
	var q corev1.ResourceQuota
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: budgets.QuotaName(budget)}, &q)
	return &q, err
}

// waitShare waits until the member's quota enforces share of res.
func waitShare(t testing.TB, ns, budget string, res corev1.ResourceName, share string) {
	t.Helper()
	want := resource.MustParse(share)
	eventually(t, 20*time.Second, func() (bool, string) {
		q, err := quota(t.Context(), ns, budget)
		if err != nil {
			return false, err.Error()
		}
		got, ok := q.Status.Hard[res]
		spec := q.Spec.Hard[res]
		return ok && got.Cmp(want) == 0 && spec.Cmp(want) == 0, fmt.Sprintf("%s: spec %s, enforced %s, used %v, want %s", ns, spec.String(), got.String(), q.Status.Used, share)
	})
}

// eventually polls cond every 20ms until it holds or timeout passes.
func eventually(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", timeout, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var podSeq atomic.Int64

// createPod creates a pod that requests cpu in ns, as a workload would.
func createPod(ctx context.Context, c client.Client, ns, cpuRequest string) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p-%d", podSeq.Add(1)), Labels: map[string]string{"budgets.test/pod": "yes"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: "example.org/train:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuRequest)}},
		}}},
	}
	return c.Create(ctx, pod)
}

// refused reports whether err is the quota admission's refusal.
func refused(err error) bool { return err != nil && strings.Contains(err.Error(), "exceeded quota") }

// recordRefusal records a FailedCreate Event in ns for err, as a workload
// controller (a ReplicaSet's, a Job's) does when the quota refuses a pod.
func recordRefusal(ctx context.Context, c client.Client, ns string, err error) error {
	now := metav1.Now()
	return c.Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, GenerateName: "train-"},
		InvolvedObject: corev1.ObjectReference{Kind: "ReplicaSet", Namespace: ns, Name: "train", APIVersion: "apps/v1"},
		Reason:         "FailedCreate",
		Message:        "Error creating: " + err.Error(),
		Type:           corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "replicaset-controller"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	})
}

// askForMore fills a member's CPU share of 1 with one pod, has a second
// pod refused by its quota and records the refusal as a workload
// controller would: the member asks its budget for one CPU more.
func askForMore(t testing.TB, ns string) {
	t.Helper()
	ctx := t.Context()
	if err := createPod(ctx, env.Client, ns, "1"); err != nil {
		t.Fatalf("first pod within %s's share: %v", ns, err)
	}
	err := createPod(ctx, env.Client, ns, "1")
	if !refused(err) {
		t.Fatalf("second pod beyond %s's share: %v, want refused", ns, err)
	}
	if err := recordRefusal(ctx, env.Client, ns, err); err != nil {
		t.Fatal(err)
	}
}

// restConfig is env's config with a client rate for load.
func restConfig() *rest.Config {
	rc := rest.CopyConfig(env.Config)
	rc.QPS, rc.Burst = 500, 500
	return rc
}
