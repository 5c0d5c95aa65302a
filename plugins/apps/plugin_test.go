package apps_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apps"
	"github.com/profilekit/profilekit/reconcilers"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{Istio: true, ArgoCD: true}) }

const (
	condType = "AppsReady"
	optIn    = "apps.example.org/s3-browser"
	argocdNS = "argocd"
)

// s3Browser is the example config: an S3 browser proxy per Profile.
var s3Browser = map[string]any{
	"rootURL": "https://kubeflow.example.org",
	"apps": []any{map[string]any{
		"name":       "s3-browser",
		"optInLabel": optIn,
		"source": map[string]any{
			"repoURL":        "https://charts.example.org/s3-browser.git",
			"path":           "chart",
			"targetRevision": "v1.4.0",
			"helm": map[string]any{
				"parameters":   []any{map[string]any{"name": "bucketPrefix", "value": "{{ .Namespace }}"}},
				"valuesObject": map[string]any{"baseURL": "{{ .AppURL }}", "owner": "{{ .Owner }}", "metrics": map[string]any{"enabled": false}},
			},
		},
		"route": map[string]any{"service": "s3-browser", "port": 8080, "rewriteToRoot": true, "dashboardRedirect": true},
		"networkPolicies": []any{map[string]any{
			"name":        "s3-browser",
			"podSelector": map[string]any{"matchLabels": map[string]any{"app": "s3-browser"}},
			"policyTypes": []any{"Ingress"},
			"ingress": []any{map[string]any{"from": []any{map[string]any{
				"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "istio-system"}},
			}}}},
		}},
	}},
}

func start(t *testing.T) *testhost.Host {
	t.Helper()
	b, err := json.Marshal(s3Browser)
	if err != nil {
		t.Fatal(err)
	}
	ensureNamespace(t, argocdNS)
	return testhost.Start(t, env, testhost.Plugin{Def: apps.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults(b),
		reconcilers.WithEnabledForAll(nil),
		reconcilers.WithResync(300 * time.Millisecond),
	}})
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func application(t *testing.T, ns string) (*unstructured.Unstructured, bool) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apps.ApplicationKind)
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: argocdNS, Name: apps.ApplicationName(ns, "s3-browser")}, u)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return u, true
}

// finishArgoCD drops the resources finalizer of the deleted Application, as
// Argo CD does once it has removed what the Application deployed.
func finishArgoCD(t *testing.T, ns string) {
	t.Helper()
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		u, ok := application(t, ns)
		if !ok {
			return true, ""
		}
		if u.GetDeletionTimestamp() == nil {
			return false, "Application not deleted yet"
		}
		if !slices.Contains(u.GetFinalizers(), apps.ResourcesFinalizer) {
			return false, fmt.Sprintf("deleted Application lacks %s", apps.ResourcesFinalizer)
		}
		u.SetFinalizers(nil)
		if err := env.Client.Update(t.Context(), u); err != nil && !apierrors.IsNotFound(err) {
			return false, err.Error()
		}
		return false, "finalizer removed"
	})
}

func setLabel(t *testing.T, name, value string) {
	t.Helper()
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[optIn] = value
	})
}

func gone(t *testing.T, ns string, obj client.Object) bool {
	t.Helper()
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "s3-browser"}, obj)
	return apierrors.IsNotFound(err)
}

func TestS3BrowserPerProfile(t *testing.T) {
	h := start(t)
	name := "apps-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, map[string]string{optIn: "true"})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "3 objects in sync")

	t.Run("the Application has the source, destination and sync policy", func(t *testing.T) {
		u, ok := application(t, name)
		if !ok {
			t.Fatal("no Application")
		}
		want := map[string]any{
			"project": "default",
			"source": map[string]any{
				"repoURL": "https://charts.example.org/s3-browser.git", "path": "chart", "targetRevision": "v1.4.0",
				"helm": map[string]any{
					"parameters": []any{map[string]any{"name": "bucketPrefix", "value": name}},
					"valuesObject": map[string]any{
						"baseURL": "https://kubeflow.example.org/s3-browser/" + name + "/",
						"owner":   "owner@example.org",
						"metrics": map[string]any{"enabled": false},
					},
				},
			},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": name},
			"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true, "selfHeal": true}},
		}
		if d := cmp.Diff(want, u.Object["spec"]); d != "" {
			t.Errorf("spec (-want +got):\n%s", d)
		}
		if !slices.Contains(u.GetFinalizers(), apps.ResourcesFinalizer) {
			t.Errorf("finalizers %v", u.GetFinalizers())
		}
		if !plugins.IsOwnedBy(u.GetLabels(), apps.Kind, name) {
			t.Errorf("labels %v", u.GetLabels())
		}
	})

	t.Run("the route and the policy are in the Profile's namespace", func(t *testing.T) {
		var vs istionetworkingv1.VirtualService
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "s3-browser"}, &vs); err != nil {
			t.Fatal(err)
		}
		r := vs.Spec.Http[len(vs.Spec.Http)-1]
		if r.Match[0].Uri.GetPrefix() != "/s3-browser/"+name+"/" || r.Rewrite.GetUri() != "/" || r.Route[0].Destination.Host != "s3-browser."+name+".svc.cluster.local" {
			t.Errorf("route %v", r)
		}
		if gone(t, name, &networkingv1.NetworkPolicy{}) {
			t.Error("no NetworkPolicy")
		}
	})

	t.Run("a second pass sends no mutating request", func(t *testing.T) {
		// Only this Profile's: the Profiles of the tests before wait in
		// their deletion for Argo CD, which envtest does not run, and this
		// host's first pass over them writes that on their condition.
		var got []string
		for _, r := range h.ResyncWrites(t, 3, apps.Kind) {
			if strings.Contains(r, "/"+name+"/") || strings.HasSuffix(r, "/"+name) {
				got = append(got, r)
			}
		}
		if len(got) != 0 {
			t.Errorf("resync sent %d mutating requests for %s: %v", len(got), name, got)
		}
	})

	t.Run("a false value removed by hand is put back", func(t *testing.T) {
		// Without it the chart's default (true) would deploy what the
		// platform turned off.
		u, _ := application(t, name)
		patch := []byte(`{"spec":{"source":{"helm":{"valuesObject":{"metrics":{"enabled":null}}}}}}`)
		if err := env.Client.Patch(t.Context(), u, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("kubectl-edit")); err != nil {
			t.Fatal(err)
		}
		testhost.Eventually(t, 10*time.Second, func() (bool, string) {
			u, _ := application(t, name)
			v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "source", "helm", "valuesObject", "metrics", "enabled")
			return found && v == false, fmt.Sprintf("metrics.enabled = %v (found %v)", v, found)
		})
	})

	t.Run("a label that is not a boolean is reported and keeps the app", func(t *testing.T) {
		setLabel(t, name, "maybe")
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, `label `+optIn+`="maybe" is not true or false`)
		// Argo CD's finalizer holds a deleted Application: a deletion
		// begun is the loss, not only one finished.
		if u, ok := application(t, name); !ok || u.GetDeletionTimestamp() != nil {
			t.Error("the Application was deleted over a bad label")
		}
	})

	t.Run("opting out deletes the Application through Argo CD's finalizer, the route and the policy", func(t *testing.T) {
		setLabel(t, name, "false")
		// Until Argo CD is done, the revoke waits: not a failure, so the
		// condition says Waiting, naming the Application, and no Warning
		// Event is recorded.
		cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionUnknown, plugins.ReasonWaiting)
		if !strings.Contains(cond.Message, apps.ApplicationName(name, "s3-browser")) {
			t.Errorf("condition %q does not name the Application it waits for", cond.Message)
		}
		for _, e := range testhost.Events(t, env.Client, name) {
			if strings.Contains(e, " Warning ") && strings.Contains(e, "Waiting") || strings.Contains(e, " Warning RevokeFailed") {
				t.Errorf("a wait recorded a Warning Event: %s", e)
			}
		}
		finishArgoCD(t, name)
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			return gone(t, name, &istionetworkingv1.VirtualService{}) && gone(t, name, &networkingv1.NetworkPolicy{}), "route or policy left"
		})
	})

	t.Run("Profile deletion waits for Argo CD, then completes with nothing left", func(t *testing.T) {
		setLabel(t, name, "true")
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "3 objects in sync")
		if err := env.Client.Delete(t.Context(), &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			u, ok := application(t, name)
			return ok && u.GetDeletionTimestamp() != nil, "Application not being deleted"
		})
		time.Sleep(time.Second)
		var p kubeflowv1.Profile
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			t.Fatalf("the Profile went before its Application: %v", err)
		}
		if !slices.Contains(p.Finalizers, plugins.FinalizerPrefix+apps.Kind) {
			t.Errorf("Profile finalizers %v", p.Finalizers)
		}
		finishArgoCD(t, name)
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &kubeflowv1.Profile{})
			return apierrors.IsNotFound(err), fmt.Sprintf("Profile: %v", err)
		})
		if !gone(t, name, &istionetworkingv1.VirtualService{}) || !gone(t, name, &networkingv1.NetworkPolicy{}) {
			t.Error("route or policy left behind")
		}
	})
}
