package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/profilekit/profilekit/examples/host/internal/local"
)

// otherController, set in the environment, makes the test binary the
// controller RunExternal measures (see TestMain).
const otherController = "BENCH_TEST_OTHER_CONTROLLER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(otherController); mode != "" {
		runOtherController(mode == "status")
		return
	}
	os.Exit(m.Run())
}

// runOtherController is a controller of its own kind: each ConfigMap
// labelled as a tenant and owned by its namespace (the template's second
// document names the first's uid) gets a ResourceQuota and a LimitRange in its
// namespace, each created once. With writeStatus it also writes the
// status of one quota every 200 ms, as a controller that reports needless
// status would.
func runOtherController(writeStatus bool) {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		panic(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background() //nolint:forbidigo // the other controller, a process of its own, has no test
	done := map[string]bool{}
	for tick := 0; ; tick++ {
		time.Sleep(200 * time.Millisecond)
		cms, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: "bench.test/tenant=yes"})
		if err != nil {
			continue
		}
		for _, cm := range cms.Items {
			if done[cm.Namespace] {
				continue
			}
			// Only a tenant whose ConfigMap names its namespace as owner.
			ns, err := cs.CoreV1().Namespaces().Get(ctx, cm.Namespace, metav1.GetOptions{})
			if err != nil || len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != ns.UID {
				continue
			}
			q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}}}
			l := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}}
			_, qerr := cs.CoreV1().ResourceQuotas(cm.Namespace).Create(ctx, q, metav1.CreateOptions{})
			_, lerr := cs.CoreV1().LimitRanges(cm.Namespace).Create(ctx, l, metav1.CreateOptions{})
			done[cm.Namespace] = (qerr == nil || apierrors.IsAlreadyExists(qerr)) && (lerr == nil || apierrors.IsAlreadyExists(lerr))
		}
		if writeStatus && done["warmup"] {
			q, err := cs.CoreV1().ResourceQuotas("warmup").Get(ctx, "quota", metav1.GetOptions{})
			if err == nil {
				q.Status.Hard = corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(tick), resource.DecimalSI)}
				_, _ = cs.CoreV1().ResourceQuotas("warmup").UpdateStatus(ctx, q, metav1.UpdateOptions{})
			}
		}
	}
}

// TestRunExternal measures another controller, this test binary, the way
// a side-by-side run measures one: its requests per object are its own
// (one create per object, the benchmark's creates of the input left out),
// and an idle controller that writes status is seen doing it.
func TestRunExternal(t *testing.T) {
	root := local.RepoRoot()
	tmpl := filepath.Join(t.TempDir(), "tenant.yaml")
	if err := os.WriteFile(tmpl, []byte(`apiVersion: v1
kind: Namespace
metadata: {name: "{{.Name}}"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: tenant
  namespace: "{{.Name}}"
  labels: {bench.test/tenant: "yes"}
  ownerReferences: [{apiVersion: v1, kind: Namespace, name: "{{.Name}}", uid: "{{.UIDs.Namespace}}"}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode       string
		wantStatus bool
	}{{"quiet", false}, {"status", true}} {
		t.Run(c.mode, func(t *testing.T) {
			t.Setenv(otherController, c.mode)
			res, err := RunExternal(t.Context(), ExternalOptions{
				AssetsDir: local.AssetsDir(root), Command: []string{os.Args[0]}, Tenants: 5, Template: tmpl,
				Want: map[string]int{"resourcequotas": 1, "limitranges": 1}, Idle: 3 * time.Second, Timeout: 2 * time.Minute, Out: tWriter{t}, WorkDir: t.TempDir(),
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Objects != 10 || res.ObjectsPerSecond <= 0 || res.ControllerCPUSeconds <= 0 {
				t.Errorf("objects %d at %.1f/s, controller CPU %.2f s: want 10, a rate and some CPU", res.Objects, res.ObjectsPerSecond, res.ControllerCPUSeconds)
			}
			want := map[string]int{"POST resourcequotas": 5, "POST limitranges": 5}
			if c.wantStatus {
				delete(res.Mutating, "PUT resourcequotas/status")
			}
			if diff := cmp.Diff(want, res.Mutating); diff != "" {
				t.Errorf("the controller's mutating requests while converging (-want +got):\n%s", diff)
			}
			if c.wantStatus != (res.IdleStatusWritesPerMinute > 0) || c.wantStatus != (res.IdleWritesPerMinute > 0) {
				t.Errorf("idle: %.1f writes per minute, %.1f status writes; want some only from the controller that writes status", res.IdleWritesPerMinute, res.IdleStatusWritesPerMinute)
			}
		})
	}
}

// tWriter writes the run's output to the test log.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// TestShippedTemplatesRender renders every template in bench/external for
// a tenant, as RunExternal does, into objects that each name their kind
// and, where they need one, their owner's uid.
func TestShippedTemplatesRender(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(local.RepoRoot(), "bench", "external", "*.yaml"))
	if err != nil || len(paths) < 2 {
		t.Fatalf("templates %v, %v: want the shipped ones", paths, err)
	}
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := parseDocuments(string(text))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		ten := tenantOf(7)
		ten.UIDs = map[string]string{"Tenant": "uid-of-the-tenant", "Namespace": "uid-of-the-namespace"}
		var kinds []string
		for _, d := range docs {
			var buf bytes.Buffer
			if err := d.Execute(&buf, ten); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			var obj unstructured.Unstructured
			if err := utilyaml.NewYAMLOrJSONDecoder(&buf, 4096).Decode(&obj.Object); err != nil {
				t.Fatalf("%s, %s: %v", p, d.Name(), err)
			}
			if obj.GetName() != ten.Name {
				t.Errorf("%s: %s named %q, want the tenant's name", p, obj.GetKind(), obj.GetName())
			}
			for _, o := range obj.GetOwnerReferences() {
				if o.UID != "uid-of-the-tenant" {
					t.Errorf("%s: %s owned by uid %q", p, obj.GetKind(), o.UID)
				}
			}
			kinds = append(kinds, obj.GetKind())
		}
		t.Logf("%s: %v", filepath.Base(p), kinds)
	}
}

// TestRunExternalRefusesWhatItCannotRun: options that name no command,
// template, tenant or wanted resource, or a template that does not parse,
// are refused before any control plane starts.
func TestRunExternalRefusesWhatItCannotRun(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("kind: Namespace\nmetadata: {name: \"{{.Name\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := ExternalOptions{Command: []string{"true"}, Tenants: 1, Template: bad, Want: map[string]int{"configmaps": 1}, AssetsDir: "/nonexistent"}
	for _, c := range []struct {
		reason string
		change func(*ExternalOptions)
		want   string
	}{
		{"no command", func(o *ExternalOptions) { o.Command = nil }, "a command"},
		{"no tenants", func(o *ExternalOptions) { o.Tenants = 0 }, "a positive number of tenants"},
		{"nothing wanted", func(o *ExternalOptions) { o.Want = nil }, "wanted resource"},
		{"a template that does not parse", func(o *ExternalOptions) {}, "tenant template"},
	} {
		o := ok
		c.change(&o)
		_, err := RunExternal(t.Context(), o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error that says %q", c.reason, err, c.want)
		}
	}
}
