package main

// This file holds the fault test of a kube-apiserver restart, on a control
// plane that can be restarted.

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/quotas"
)

// startRestartableControlPlane starts a control plane of its own, whose API
// server can be stopped and started again on the same address with the same
// serving certificate, so that clients made before a restart still reach it.
func startRestartableControlPlane(t *testing.T) (*envtest.Environment, *rest.Config) {
	t.Helper()
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	s, err := testenv.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	cp := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(testenv.RepoRoot(), "api", "kubeflow", "crd")},
		ErrorIfCRDPathMissing: true,
		Scheme:                s,
	}
	// envtest keeps the secure port it picked on the first start, but it
	// puts the serving certificate in a temporary folder that Stop deletes,
	// and a restart would make a new CA. A folder of the test's keeps the
	// certificate, and the client's CA stays valid.
	cp.ControlPlane.APIServer = &envtest.APIServer{CertDir: t.TempDir(), StopTimeout: 60 * time.Second}
	cp.ControlPlane.APIServer.Configure().Set("shutdown-watch-termination-grace-period", "1s")
	cfg, err := cp.Start()
	if err != nil {
		t.Fatalf("start control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stop control plane: %v", err)
		}
	})
	return cp, cfg
}

// waitAPIServerReady waits until the API server cfg reaches says it is ready, which
// it does once its informers, those of the RBAC it authorizes by among
// them, have synced.
func waitAPIServerReady(t *testing.T, cfg *rest.Config) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(t.Context())
		if err != nil {
			return false, fmt.Sprintf("/readyz: %v %s", err, body)
		}
		return true, ""
	})
}

// TestFaultAPIServerRestart stops the API server under a running host and
// starts it again: the host recovers by itself, serves a Profile created after
// the restart and repairs an object deleted after it.
func TestFaultAPIServerRestart(t *testing.T) {
	t.Parallel()
	cp, cfg := startRestartableControlPlane(t)
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	shard := "apiserver-" + rand.String(5)
	prefix := "fault-" + shard + "-"
	hostCfg, reg := faultConfig(t, shard, "fault-apiserver", 100)
	// Without leader election: a host that holds a Lease rightly stops when
	// it cannot renew it, and this test is about a host that keeps running.
	h := startHost(t, "host", cfg, hostCfg, reg, false)

	before := prefix + "before"
	faultProfile(t, c, before, shard, true)
	waitConverged(t, c, 30*time.Second, before)

	apiServer := cp.ControlPlane.GetAPIServer()
	addr := apiServer.SecureServing.ListenAddr.HostPort()
	// Until it has read the cluster's RBAC again, the API server forbids
	// the host everything; that says nothing about the host's rights.
	h.rbac.settling.Store(true)
	down := time.Now()
	if err := apiServer.Stop(); err != nil {
		t.Fatalf("stop API server: %v", err)
	}
	t.Logf("API server stopped in %s", time.Since(down).Round(time.Millisecond))
	if err := c.List(t.Context(), &kubeflowv1.ProfileList{}); err == nil {
		t.Fatal("the API server still answers after Stop")
	}
	// Long enough for the host's watches to fail and its clients to back off.
	time.Sleep(2 * time.Second)
	h.running(t)
	if err := apiServer.Start(); err != nil {
		t.Fatalf("start API server again: %v", err)
	}
	if got := apiServer.SecureServing.ListenAddr.HostPort(); got != addr {
		t.Fatalf("the API server came back on %s, not %s", got, addr)
	}
	t.Logf("API server down for %s", time.Since(down).Round(time.Millisecond))
	waitAPIServerReady(t, cfg)
	h.rbac.settling.Store(false)

	up := time.Now()
	after := prefix + "after"
	faultProfile(t, c, after, shard, false)
	waitConverged(t, c, 30*time.Second, after)
	t.Logf("host converged %s %s after the API server came back", after, time.Since(up).Round(time.Millisecond))

	// The watches on our own objects are back too: a deleted quota returns.
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: before, Name: quotas.DefaultName}}
	if err := c.Delete(t.Context(), rq); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(rq), rq)
		return err == nil, fmt.Sprintf("quota of %s after deletion: %v", before, err)
	})
	h.running(t)
	if d := diffSets(wantObjects(map[string]bool{before: true, after: false}), ownedObjects(t, c, prefix)); d != "" {
		t.Errorf("owned objects:%s", d)
	}
}
