package main

// The setups whose hosts no other test of this package runs, under the
// chart's RBAC: the admission webhook with its own certificate, and the
// budgets balancer. The others run under it through the tests' shared
// helpers: startHost (the fault, shard and records tests), rolloutHost,
// startMoveoverHost (core), the page's test, TestRun and
// TestMonitoringMetricsExported (every plugin the binary is built with).

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/admission"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apps"
	"github.com/profilekit/profilekit/plugins/blobcsi"
	"github.com/profilekit/profilekit/plugins/budgets"
	"github.com/profilekit/profilekit/plugins/quotas"
)

// TestWebhookUnderChartRBAC runs a host with the admission webhook and a
// certificate of its own under the chart's RBAC for that configuration: it
// makes its Secret, writes its CA into the ValidatingWebhookConfiguration
// the chart names, and the API server, calling it, refuses a Profile with a
// spec quotas rejects and admits a good one, whose quota the host writes.
func TestWebhookUnderChartRBAC(t *testing.T) {
	ctx := t.Context()
	run := rand.String(5)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	// The chart's ValidatingWebhookConfiguration, named as it names it (its
	// RBAC grants the CA's update on that name), reaching the host by URL
	// and sent only this test's Profiles.
	const label = "webhook-rbac.profilekit.dev/run"
	url := fmt.Sprintf("https://127.0.0.1:%d%s", port, hostconfig.DefaultWebhookPath)
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: hostconfig.DefaultWebhookConfigName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "profiles.profilekit.dev", AdmissionReviewVersions: []string{"v1"}, SideEffects: &none, FailurePolicy: &fail,
			ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: run}},
			ClientConfig:   admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"kubeflow.org"}, APIVersions: []string{"v1", "v1beta1"}, Resources: []string{"profiles"}},
			}},
		}},
	}
	if err := env.Client.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: hostNamespace, Name: hostconfig.DefaultWebhookSecret}}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), vwc)    //nolint:forbidigo // cleanups run after t.Context is canceled
		_ = env.Client.Delete(context.Background(), secret) //nolint:forbidigo // cleanups run after t.Context is canceled
	})

	cfg, reg := parseHostConfig(t, fmt.Sprintf(`
leaderElection: {id: webhook-%[1]s, namespace: %[2]s}
shardSelector: {matchLabels: {%[3]s: "%[1]s"}}
plugins:
  quotas: {enabled: all, defaults: {hard: {limits.cpu: "2"}}}
webhook:
  enabled: true
  host: 127.0.0.1
  port: %[4]d
  certificates: selfSigned
  selfSigned:
    dnsNames: [profilekit-webhook.%[2]s.svc]
    ipAddresses: [127.0.0.1]
`, run, hostNamespace, label, port))
	startHost(t, "webhook", env.Config, cfg, reg, true)

	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		var live admissionregistrationv1.ValidatingWebhookConfiguration
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(vwc), &live); err != nil {
			return false, err.Error()
		}
		var sec corev1.Secret
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(secret), &sec); err != nil {
			return false, err.Error()
		}
		ca := string(live.Webhooks[0].ClientConfig.CABundle)
		return ca != "" && ca == string(sec.Data[admission.SecretCA]), "the configuration's caBundle is not the Secret's CA yet"
	})

	profile := func(name, cpu string) *kubeflowv1.Profile {
		return &kubeflowv1.Profile{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{label: run}},
			Spec: kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: testhost.DefaultOwner}, Plugins: []kubeflowv1.Plugin{{TypeMeta: metav1.TypeMeta{Kind: quotas.Kind},
				Spec: &runtime.RawExtension{Raw: fmt.Appendf(nil, `{"hard":{"limits.cpu":%q}}`, cpu)}}}},
		}
	}
	bad := profile("webhook-bad-"+run, "lots")
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		// Until the server answers, Fail refuses with "failed calling webhook".
		err := env.Client.Create(ctx, bad)
		if err == nil {
			_ = env.Client.Delete(ctx, bad)
			t.Fatal("a Profile with a limit that is not a quantity was admitted")
		}
		return strings.Contains(err.Error(), `denied the request`) && strings.Contains(err.Error(), `"lots" is not a quantity`), err.Error()
	})

	good := profile("webhook-good-"+run, "3")
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: good.Name}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, good); err != nil {
		t.Fatalf("the webhook refused a good Profile: %v", err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), good)                                                              //nolint:forbidigo // cleanups run after t.Context is canceled
		_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: good.Name}}) //nolint:forbidigo // cleanups run after t.Context is canceled
	})
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		var rq corev1.ResourceQuota
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: good.Name, Name: quotas.DefaultName}, &rq)
		return err == nil, fmt.Sprintf("the good Profile's quota: %v", err)
	})
}

// TestBudgetsUnderChartRBAC runs a host with config/lab-budgets.yaml's
// budget under the chart's RBAC for it: both members of the lab get their
// share's quota, and a Profile that leaves the lab loses it.
func TestBudgetsUnderChartRBAC(t *testing.T) {
	ctx := t.Context()
	run := rand.String(5)
	cfg, reg := parseHostConfig(t, fmt.Sprintf(`
resyncPeriod: 1h
leaderElection: {id: budgets-%[1]s, namespace: default}
shardSelector: {matchLabels: {budgets-rbac: "%[1]s"}}
plugins:
  budgets:
    enabled: all
    defaults:
      budgets:
      - name: vision-lab
        profileSelector: {matchLabels: {lab: vision-%[1]s}}
        hard: {requests.cpu: "8", count/pods: "40"}
        grant: {requests.cpu: "2"}
`, run))
	startHost(t, "budgets", env.Config, cfg, reg, true)

	var names []string
	for i := range 2 {
		name := fmt.Sprintf("budgets-%s-%d", run, i)
		names = append(names, name)
		testhost.NewProfile(t, env.Client, name, map[string]string{"budgets-rbac": run, "lab": "vision-" + run})
	}
	quota := func(ns string) (*corev1.ResourceQuota, error) {
		var rq corev1.ResourceQuota
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: budgets.QuotaName("vision-lab")}, &rq)
		return &rq, err
	}
	for _, name := range names {
		testhost.Eventually(t, 30*time.Second, func() (bool, string) {
			// A share starts at what the member uses, nothing here.
			rq, err := quota(name)
			if err != nil {
				return false, fmt.Sprintf("%s's share: %v", name, err)
			}
			_, ok := rq.Spec.Hard[corev1.ResourceRequestsCPU]
			return ok, fmt.Sprintf("%s's share: %v", name, rq.Spec.Hard)
		})
	}

	testhost.UpdateProfile(t, env.Client, names[1], func(p *kubeflowv1.Profile) { delete(p.Labels, "lab") })
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		_, err := quota(names[1])
		return apierrors.IsNotFound(err), fmt.Sprintf("the share of %s, which left the lab: %v", names[1], err)
	})
}

// parseHostConfig parses a host configuration of a test.
func parseHostConfig(t *testing.T, data string) (*hostconfig.Config, *plugins.Registry) {
	t.Helper()
	reg, _ := registryAndScheme(t)
	cfg, err := hostconfig.Parse(t.Name()+".yaml", []byte(data), reg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, reg
}

// everyPluginSpecs are the entries TestMonitoringMetricsExported's Profile
// lists with a spec, so that the plugins make something to revoke.
var everyPluginSpecs = []kubeflowv1.Plugin{
	{TypeMeta: metav1.TypeMeta{Kind: "expose"}, Spec: &runtime.RawExtension{Raw: []byte(`{"apps":[{"name":"board","service":"board","port":8080}]}`)}},
	{TypeMeta: metav1.TypeMeta{Kind: "egress"}, Spec: &runtime.RawExtension{Raw: []byte(`{"hosts":[{"host":"pypi.org"}]}`)}},
}

// egressGate is the Profile label config/istio.yaml's egress plugin is
// gated on.
const egressGate = "egress.profilekit.dev/enabled"

// revokedKinds are the kinds of the plugins checkEveryPluginRevokes takes
// away from the Profile.
var revokedKinds = map[string][]schema.GroupVersionKind{
	"limitrange": {{Version: "v1", Kind: "LimitRange"}},
	"expose":     {{Group: "networking.istio.io", Version: "v1", Kind: "VirtualService"}},
	"replicate":  {{Version: "v1", Kind: "Secret"}},
	"egress": {{Group: "networking.istio.io", Version: "v1", Kind: "ServiceEntry"}, {Group: "networking.istio.io", Version: "v1", Kind: "DestinationRule"},
		{Group: "networking.istio.io", Version: "v1", Kind: "VirtualService"}},
}

// checkEveryPluginRevokes takes the plugins the Profile lists and the
// egress gate away from it, waits until those plugins' objects are gone,
// then deletes the Profile and waits until the plugins that hold a
// finalizer on it have let it go, but those that wait for a controller the
// test's control plane does not run: the host prunes and revokes under the
// RBAC it runs with.
func checkEveryPluginRevokes(t *testing.T, c client.Client, name string) {
	t.Helper()
	ctx := t.Context()
	for kind, gvks := range revokedKinds {
		for _, gvk := range gvks {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := c.List(ctx, list, client.InNamespace(name), client.MatchingLabels{plugins.LabelPlugin: kind}); err != nil || len(list.Items) == 0 {
				t.Fatalf("%s has no %s of plugin %s to revoke: %v", name, gvk.Kind, kind, err)
			}
		}
	}
	testhost.UpdateProfile(t, c, name, func(p *kubeflowv1.Profile) {
		p.Spec.Plugins = nil
		delete(p.Labels, egressGate)
	})
	testhost.Eventually(t, 60*time.Second, func() (bool, string) {
		var left []string
		for kind, gvks := range revokedKinds {
			for _, gvk := range gvks {
				list := &unstructured.UnstructuredList{}
				list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
				if err := c.List(ctx, list, client.InNamespace(name), client.MatchingLabels{plugins.LabelPlugin: kind}); err != nil {
					return false, err.Error()
				}
				for _, o := range list.Items {
					left = append(left, kind+": "+gvk.Kind+" "+o.GetName())
				}
			}
		}
		return len(left) == 0, fmt.Sprintf("left after the plugins stopped applying: %v", left)
	})

	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	// apps waits for Argo CD to delete the Application it deleted, blobcsi
	// for the claims it deleted to go, which kube-controller-manager's
	// pvc-protection lets happen.
	waiting := []string{apps.Definition().Finalizer(), blobcsi.Definition().Finalizer()}
	testhost.Eventually(t, 60*time.Second, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(p), p)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		left := slices.DeleteFunc(slices.Clone(p.Finalizers), func(f string) bool { return slices.Contains(waiting, f) })
		return err == nil && len(left) == 0, fmt.Sprintf("the deleted Profile still has finalizers %v (%v)", p.Finalizers, err)
	})
}
