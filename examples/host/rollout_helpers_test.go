package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/rollout"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
)

// rolloutProfiles is how many Profiles the rollout tests serve. 1,000 by
// default; -rollout-profiles=5000 is the longer run of docs/configuration.md
// ("Staged rollouts").
var rolloutProfiles = flag.Int("rollout-profiles", 1000, "Profiles of TestRollout*")

// rolloutShard labels the Profiles of the rollout tests: the configurations
// of testdata/rollout serve only those.
const rolloutShard = "rollout.profilekit.dev/test"

// rolloutState reads the rollout's ConfigMap; nil when there is none.
func rolloutState(t *testing.T) map[string]string {
	t.Helper()
	var cm corev1.ConfigMap
	err := env.Client.Get(context.WithoutCancel(t.Context()), types.NamespacedName{Namespace: "default", Name: rollout.ConfigMapName}, &cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data
}

// forgetRollout deletes the rollout's ConfigMap now and when the test ends,
// so that each test starts as a first start.
func forgetRollout(t *testing.T) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	del := func() {
		err := env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: rollout.ConfigMapName}})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
	del()
	t.Cleanup(del)
}

// rolloutHost runs a host with config as `profilekit run` makes it, on the
// cluster the administrator's restCfg reaches, under the RBAC the chart
// renders for config: the rollout is prepared before the manager and added
// to it.
func rolloutHost(t *testing.T, name, config string, restCfg *rest.Config) *faultHost {
	t.Helper()
	cfg, reg := loadHostConfig(t, config)
	restCfg = underChartFile(t, restCfg, config)
	c, err := client.New(restCfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := rollout.Prepare(context.WithoutCancel(t.Context()), c, cfg, reg)
	if err != nil {
		t.Fatal(err)
	}
	h := &faultHost{name: name, log: &requestLog{}, done: make(chan error, 1)}
	mgr, err := server.NewManager(restCfg, cfg, reg, server.Options{
		MetricsAddr: "0", ProbeAddr: "0", Logger: logr.Discard(), SkipNameValidation: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Add(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background()) //nolint:forbidigo // the host serves the cleanups, which run after t.Context is canceled
	h.cancel = cancel
	go func() { h.done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		if err := h.stop(); err != nil {
			t.Errorf("host %s: %v", name, err)
		}
	})
	return h
}

// rolloutProfile is one Profile of a rollout test with its place in the
// rollout's order.
type rolloutProfile struct {
	name string
	key  uint64
}

// createRolloutProfiles creates n Profiles of rolloutShard, each with its
// namespace and the label that adds requests.cpu=2 to its quota, and
// returns them with their keys.
func createRolloutProfiles(t *testing.T, prefix string, n int) []rolloutProfile {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	out := make([]rolloutProfile, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	places := make(chan struct{}, 8)
	for i := range n {
		name := fmt.Sprintf("%s-%04d", prefix, i)
		places <- struct{}{}
		wg.Go(func() {
			defer func() { <-places }()
			if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
				errs[i] = err
				return
			}
			p := &kubeflowv1.Profile{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{rolloutShard: "true", "quotas.profilekit.dev/requests.cpu": "2"}},
				Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: "User", Name: "owner@example.org"}},
			}
			errs[i] = env.Client.Create(ctx, p)
			out[i] = rolloutProfile{name: name, key: rollout.Key(p.UID)}
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, p := range out {
			_ = env.Client.Delete(ctx, &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: p.name}})
			_ = env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.name}})
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create profile %d: %v", i, err)
		}
	}
	return out
}

// stableBase starts a rollout test: with no rollout state, a host of
// base.yaml serves n new Profiles named prefix-* until their quotas are in
// and Ready, and stops. It returns the Profiles, their quotas, and the
// stable revision.
func stableBase(t *testing.T, prefix string, n int) ([]rolloutProfile, map[string]quotaSeen, string) {
	t.Helper()
	forgetRollout(t)
	h := rolloutHost(t, "rollout-base", "testdata/rollout/base.yaml", env.Config)
	profiles := createRolloutProfiles(t, prefix, n)
	quotas := waitQuotas(t, prefix, profiles, "2", 3*time.Minute)
	waitReady(t, profiles, time.Minute)
	base := rolloutState(t)["stableRevision"]
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	return profiles, quotas, base
}

// quotaSeen is a Profile's ResourceQuota as a rollout test reads it.
type quotaSeen struct {
	cpu     string
	version string
}

// rolloutQuotas returns the quotas plugin's ResourceQuotas of the Profiles named
// prefix-*, by namespace.
func rolloutQuotas(t *testing.T, prefix string) map[string]quotaSeen {
	t.Helper()
	var list corev1.ResourceQuotaList
	if err := env.Client.List(context.WithoutCancel(t.Context()), &list, client.MatchingLabels{plugins.LabelPlugin: "quotas"}); err != nil {
		t.Fatal(err)
	}
	out := map[string]quotaSeen{}
	for _, q := range list.Items {
		if !strings.HasPrefix(q.Namespace, prefix+"-") {
			continue
		}
		cpu := q.Spec.Hard[corev1.ResourceLimitsCPU]
		out[q.Namespace] = quotaSeen{cpu: cpu.String(), version: q.ResourceVersion}
	}
	return out
}

// waitQuotas waits until every Profile's quota has limits.cpu cpu.
func waitQuotas(t *testing.T, prefix string, profiles []rolloutProfile, cpu string, within time.Duration) map[string]quotaSeen {
	t.Helper()
	var seen map[string]quotaSeen
	testhost.Eventually(t, within, func() (bool, string) {
		seen = rolloutQuotas(t, prefix)
		n := 0
		for _, p := range profiles {
			if seen[p.name].cpu == cpu {
				n++
			}
		}
		return n == len(profiles), fmt.Sprintf("%d of %d quotas with limits.cpu %s", n, len(profiles), cpu)
	})
	return seen
}

// waitReady waits until every Profile's QuotasReady condition is True.
func waitReady(t *testing.T, profiles []rolloutProfile, within time.Duration) {
	t.Helper()
	names := map[string]bool{}
	for _, p := range profiles {
		names[p.name] = true
	}
	testhost.Eventually(t, within, func() (bool, string) {
		var list kubeflowv1.ProfileList
		if err := env.Client.List(context.WithoutCancel(t.Context()), &list, client.MatchingLabels{rolloutShard: "true"}); err != nil {
			return false, err.Error()
		}
		n := 0
		for _, p := range list.Items {
			c := plugins.FindCondition(p.Status.Conditions, "QuotasReady")
			if names[p.Name] && c != nil && c.Status == plugins.ConditionTrue {
				n++
			}
		}
		return n == len(profiles), fmt.Sprintf("%d of %d Profiles QuotasReady", n, len(profiles))
	})
}

// gauge reads a gauge of the process's metrics registry (the hosts of
// the tests share it).
func gauge(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range m.GetLabel() {
					found = found || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
				}
				if !found {
					continue metrics
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s%v", name, labels)
	return 0
}
