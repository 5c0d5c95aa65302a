package templates_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/templates"
	"github.com/profilekit/profilekit/reconcilers"
)

var env *testenv.Env

// TestMain starts a control plane with the Prometheus Operator's CRDs (a
// ServiceMonitor is the templated custom resource) and a cluster-scoped
// CRD that no well-known list names.
func TestMain(m *testing.M) {
	prometheus, err := testenv.PrometheusOperatorCRDs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testenv.Main(m, &env, testenv.Options{CRDPaths: []string{prometheus, filepath.Join("testdata", "clusterwidget-crd.yaml")}})
}

const condType = "TemplatesReady"

// teamLabel selects a Profile for the ServiceMonitor, and names its team.
const teamLabel = "example.org/team"

// everyProfile are host defaults that give every Profile of a team a
// ServiceMonitor, and every Profile a Role.
const everyProfile = `
templates:
- name: metrics
  profileSelector: {matchExpressions: [{key: example.org/team, operator: Exists}]}
  object:
    apiVersion: monitoring.coreos.com/v1
    kind: ServiceMonitor
    metadata:
      name: profile-metrics
      labels: {example.org/team: '{{ .Label "example.org/team" }}'}
    spec:
      selector: {matchLabels: {metrics.example.org/scrape: "true"}}
      namespaceSelector: {matchNames: ['{{ .Namespace }}']}
      endpoints: [{port: metrics, interval: 30s}]
- name: log-reader
  object: |
    apiVersion: rbac.authorization.k8s.io/v1
    kind: Role
    metadata:
      name: pod-log-reader
    rules:
    - {apiGroups: [""], resources: [pods, pods/log], verbs: [get, list, watch]}
`

// startHost runs the plugin for every Profile with the defaults (YAML)
// until the test ends.
func startHost(t *testing.T, defaults string, resync time.Duration) *testhost.Host {
	t.Helper()
	return testhost.Start(t, env, testhost.Plugin{Def: templates.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults(defaultsJSON(t, defaults)),
		reconcilers.WithEnabledForAll(nil),
		reconcilers.WithResync(resync),
	}})
}

func uniqueName(prefix string) string { return prefix + "-" + rand.String(5) }

// enable is the Profile's spec.plugins entry that opts into names.
func enable(names ...string) kubeflowv1.Plugin {
	p := kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: templates.Kind}}
	raw := `{"enable":[`
	for i, n := range names {
		if i > 0 {
			raw += ","
		}
		raw += `"` + n + `"`
	}
	p.Spec = &runtime.RawExtension{Raw: []byte(raw + "]}")}
	return p
}

// get reads the object of kind gvk at ns/name from the API server; nil
// when there is none.
func get(t *testing.T, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", gvk.Kind, ns, name, err)
	}
	return u
}

// waitFor waits until the object exists and check accepts it, and
// returns it.
func waitFor(t *testing.T, gvk schema.GroupVersionKind, ns, name string, check func(*unstructured.Unstructured) (bool, string)) *unstructured.Unstructured {
	t.Helper()
	var got *unstructured.Unstructured
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		got = get(t, gvk, ns, name)
		if got == nil {
			return false, fmt.Sprintf("%s %s/%s not found", gvk.Kind, ns, name)
		}
		if check == nil {
			return true, ""
		}
		return check(got)
	})
	return got
}

// waitGone waits until the object is gone.
func waitGone(t *testing.T, gvk schema.GroupVersionKind, ns, name string) {
	t.Helper()
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		return get(t, gvk, ns, name) == nil, fmt.Sprintf("%s %s/%s still there", gvk.Kind, ns, name)
	})
}

// sameObject is a check that the object is still the one of uid, at
// resourceVersion when that is set: not deleted and made again, and not
// written.
func sameObject(uid, resourceVersion string) func(*unstructured.Unstructured) (bool, string) {
	return func(u *unstructured.Unstructured) (bool, string) {
		ok := string(u.GetUID()) == uid && (resourceVersion == "" || u.GetResourceVersion() == resourceVersion)
		return ok, fmt.Sprintf("%s is %s at %s, want %s at %s", u.GetName(), u.GetUID(), u.GetResourceVersion(), uid, resourceVersion)
	}
}

// stays checks for a few seconds that the object stays what sameObject
// says it is.
func stays(t *testing.T, gvk schema.GroupVersionKind, ns, name, uid, resourceVersion string) {
	t.Helper()
	check := sameObject(uid, resourceVersion)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		u := get(t, gvk, ns, name)
		if u == nil {
			t.Fatalf("%s %s/%s was deleted", gvk.Kind, ns, name)
		}
		if ok, msg := check(u); !ok {
			t.Fatalf("%s %s/%s changed: %s", gvk.Kind, ns, name, msg)
		}
	}
}
