package core_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/reconcilers"
)

var update = flag.Bool("update", false, "rewrite the golden files from what the API server holds")

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{Istio: true, ControllerManager: true})
}

const condType = "CoreReady"

// labelTest marks the Profiles of one test, so that each test's host serves
// only its own.
const labelTest = "core.test/run"

// startCore runs the core plugin for every Profile of this test, with cfg
// (JSON) as the host's defaults.
func startCore(t *testing.T, run string, cfg map[string]any, opts ...reconcilers.Option) *testhost.Host {
	t.Helper()
	defaults, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sel := labels.SelectorFromSet(labels.Set{labelTest: run})
	return testhost.Start(t, env, testhost.Plugin{Def: core.Definition(), Options: append([]reconcilers.Option{
		reconcilers.WithDefaults(defaults),
		reconcilers.WithEnabledForAll(sel),
	}, opts...)})
}

// newProfile creates a Profile of run, and nothing else: the namespace is the
// plugin's to make.
func newProfile(t *testing.T, name, run, owner string, mutate func(*kubeflowv1.Profile)) *kubeflowv1.Profile {
	t.Helper()
	p := profile(name, owner)
	p.Labels = map[string]string{labelTest: run}
	if mutate != nil {
		mutate(p)
	}
	if err := env.Client.Create(context.Background(), p); err != nil { //nolint:forbidigo // no *testing.T in reach
		t.Fatalf("create profile: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), p) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	return p
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	// Write and rename, as a ConfigMap mount swaps its files.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

var upstreamObjects = []struct {
	gvk  schema.GroupVersionKind
	name string // empty: the namespace itself
}{
	{corev1.SchemeGroupVersion.WithKind("Namespace"), ""},
	{rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), core.OwnerRoleBinding},
	{corev1.SchemeGroupVersion.WithKind("ServiceAccount"), core.EditorAccount},
	{rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), core.EditorAccount},
	{corev1.SchemeGroupVersion.WithKind("ServiceAccount"), core.ViewerAccount},
	{rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), core.ViewerAccount},
	{securityv1.SchemeGroupVersion.WithKind("AuthorizationPolicy"), core.AuthorizationPolicy},
	{corev1.SchemeGroupVersion.WithKind("ResourceQuota"), core.ResourceQuota},
}

// getObject reads one of upstream's objects of Profile ns from the API server.
func getObject(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	key := client.ObjectKey{Namespace: ns, Name: name}
	if name == "" {
		key = client.ObjectKey{Name: ns}
	}
	err := env.Client.Get(ctx, key, u)
	return u, err
}

// normalized strips what differs from run to run (UIDs, versions, times,
// managed fields, status) from the objects of a Profile, in upstream's order.
func normalized(t *testing.T, p *kubeflowv1.Profile) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, o := range upstreamObjects {
		u, err := getObject(t.Context(), o.gvk, p.Name, o.name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		obj := u.Object
		delete(obj, "status")
		md := obj["metadata"].(map[string]any)
		for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"} {
			delete(md, f)
		}
		if ann, ok := md["annotations"].(map[string]any); ok && ann[plugins.AnnotationAppliedHash] != nil {
			ann[plugins.AnnotationAppliedHash] = "<hash>"
		}
		if refs, ok := md["ownerReferences"].([]any); ok {
			for _, r := range refs {
				if r.(map[string]any)["uid"] == string(p.UID) {
					r.(map[string]any)["uid"] = "<profile uid>"
				}
			}
		}
		out = append(out, obj)
	}
	return out
}

// compareGolden compares objects with testdata/name, or writes it under -update.
func compareGolden(t *testing.T, name string, objects []map[string]any) {
	t.Helper()
	var b strings.Builder
	for _, o := range objects {
		data, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (write it with go test -run %s -update): %v", t.Name(), err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("objects differ from %s (-want +got):\n%s", path, diff)
	}
}

func quota(hard ...string) corev1.ResourceQuotaSpec {
	l := corev1.ResourceList{}
	for i := 0; i < len(hard); i += 2 {
		l[corev1.ResourceName(hard[i])] = resource.MustParse(hard[i+1])
	}
	return corev1.ResourceQuotaSpec{Hard: l}
}

// TestUpstreamObjects checks every object against the golden file that
// spells out what the upstream controller makes for a Profile.
func TestUpstreamObjects(t *testing.T) {
	run := "golden-" + rand.String(4)
	dir := t.TempDir()
	labelsFile := filepath.Join(dir, "namespace-labels.yaml")
	writeFile(t, labelsFile, "# upstream's default file\napp.kubernetes.io/part-of: \"kubeflow-profile\"\n")
	h := startCore(t, run, map[string]any{"namespaceLabelsPath": labelsFile, "userIdPrefix": "accounts.example.org:"}, reconcilers.WithResync(300*time.Millisecond))

	// The golden file names the Profile team-golden: one per control plane.
	p := newProfile(t, "team-golden", run, "alice@example.org", func(p *kubeflowv1.Profile) {
		p.Spec.ResourceQuotaSpec = quota("cpu", "8", "memory", "32Gi", "requests.nvidia.com/gpu", "2")
	})
	testhost.WaitCondition(t, env.Client, p.Name, condType, plugins.ConditionTrue, "8 objects in sync")
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	compareGolden(t, "team-golden.yaml", normalized(t, p))

	t.Run("a second pass sends no mutating request", func(t *testing.T) {
		if got := h.ResyncWrites(t, 3, core.Kind); len(got) != 0 {
			t.Errorf("mutating requests on resync = %v, want none", got)
		}
	})

	t.Run("the Profile itself is never written, only its status", func(t *testing.T) {
		var got kubeflowv1.Profile
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(p), &got); err != nil {
			t.Fatal(err)
		}
		if got.Generation != 1 || len(got.Finalizers) != 0 || len(got.Spec.Plugins) != 0 {
			t.Errorf("profile generation %d, finalizers %v, plugins %v: want 1, none, none", got.Generation, got.Finalizers, got.Spec.Plugins)
		}
	})

	t.Run("an empty hard list removes kf-resource-quota", func(t *testing.T) {
		testhost.UpdateProfile(t, env.Client, p.Name, func(p *kubeflowv1.Profile) { p.Spec.ResourceQuotaSpec = corev1.ResourceQuotaSpec{} })
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			_, err := getObject(t.Context(), corev1.SchemeGroupVersion.WithKind("ResourceQuota"), p.Name, core.ResourceQuota)
			return apierrors.IsNotFound(err), fmt.Sprintf("quota still there (%v)", err)
		})
	})

	t.Run("a deleted RoleBinding comes back", func(t *testing.T) {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: p.Name, Name: core.OwnerRoleBinding}}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(rb), rb); err != nil {
			t.Fatal(err)
		}
		old := rb.UID
		if err := env.Client.Delete(t.Context(), rb); err != nil {
			t.Fatal(err)
		}
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(rb), rb)
			return err == nil && rb.UID != old, fmt.Sprintf("binding not back (%v)", err)
		})
	})
}

func namespaceLabels(t *testing.T, name string) map[string]string {
	t.Helper()
	var ns corev1.Namespace
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &ns); err != nil {
		return nil
	}
	return ns.Labels
}

// TestLabelsFile changes the labels file under a running host, which must
// re-reconcile every Profile with upstream's rules: values are added when
// absent and never changed, an empty value removes the key.
func TestLabelsFile(t *testing.T) {
	run := "labels-" + rand.String(4)
	labelsFile := filepath.Join(t.TempDir(), "namespace-labels.yaml")
	writeFile(t, labelsFile, "keep: \"1\"\nremove: \"2\"\n")
	// Neither the default resync (minutes) nor the file's reads (every hour
	// here) can account for anything below: only the watch of the file.
	core.SetPollEvery(t, time.Hour)
	startCore(t, run, map[string]any{"namespaceLabelsPath": labelsFile, "mesh": core.MeshNone})
	names := []string{"labels-a-" + rand.String(4), "labels-b-" + rand.String(4)}
	for _, n := range names {
		newProfile(t, n, run, "alice@example.org", nil)
	}
	for _, n := range names {
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			l := namespaceLabels(t, n)
			return l["keep"] == "1" && l["remove"] == "2", fmt.Sprintf("labels %v", l)
		})
	}
	// Someone labels the first namespace by hand: the file does not change
	// the value it sets (theirs), but its empty value removes the key
	// (gone), though our apply never held it.
	var ns corev1.Namespace
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: names[0]}, &ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels["theirs"] = "by-hand"
	ns.Labels["gone"] = "by-hand"
	if err := env.Client.Update(t.Context(), &ns); err != nil {
		t.Fatal(err)
	}

	writeFile(t, labelsFile, "keep: \"changed\"\nremove: \"\"\ngone: \"\"\ntheirs: \"from-file\"\nadded: \"3\"\n")
	for i, n := range names {
		want := map[string]string{"keep": "1", "added": "3", "theirs": "from-file"}
		if i == 0 {
			want["theirs"] = "by-hand"
		}
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			l := namespaceLabels(t, n)
			got := map[string]string{}
			for k := range want {
				got[k] = l[k]
			}
			_, kept := l["remove"]
			_, keptGone := l["gone"]
			return cmp.Diff(want, got) == "" && !kept && !keptGone, fmt.Sprintf("namespace %s labels %v", n, l)
		})
	}

	t.Run("a broken file is reported and changes nothing", func(t *testing.T) {
		before := namespaceLabels(t, names[1])
		writeFile(t, labelsFile, "- not\n- a map\n")
		cond := testhost.WaitCondition(t, env.Client, names[1], condType, plugins.ConditionFalse, "InvalidConfig")
		if !strings.Contains(cond.Message, labelsFile) {
			t.Errorf("condition %q does not name the file", cond.Message)
		}
		if diff := cmp.Diff(before, namespaceLabels(t, names[1])); diff != "" {
			t.Errorf("labels changed (-before +after):\n%s", diff)
		}
		writeFile(t, labelsFile, "keep: \"1\"\n")
		testhost.WaitCondition(t, env.Client, names[1], condType, plugins.ConditionTrue, "")
	})
}

// TestForeignNamespace gives a Profile a name whose namespace someone else
// owns: nothing in it is written, and the condition says whose it is.
func TestForeignNamespace(t *testing.T) {
	run := "foreign-" + rand.String(4)
	startCore(t, run, map[string]any{"adopt": true})
	name := "foreign-" + rand.String(5)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{core.AnnotationOwner: "bob@example.org"}}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	newProfile(t, name, run, "alice@example.org", nil)
	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "Conflict")
	if !strings.Contains(cond.Message, `belongs to "bob@example.org"`) {
		t.Errorf("condition %q does not say whose the namespace is", cond.Message)
	}
	var got corev1.Namespace
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(ns), &got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != ns.ResourceVersion {
		t.Errorf("namespace written: resourceVersion %s -> %s, labels %v", ns.ResourceVersion, got.ResourceVersion, got.Labels)
	}
	var rbs rbacv1.RoleBindingList
	if err := env.Client.List(t.Context(), &rbs, client.InNamespace(name)); err != nil {
		t.Fatal(err)
	}
	if len(rbs.Items) != 0 {
		t.Errorf("%d RoleBindings written into someone else's namespace", len(rbs.Items))
	}
}

// TestUpstreamPluginKinds gives a Profile upstream's plugin kinds, which this
// host has no plugin for: they are ignored, as upstream ignores unknown kinds.
func TestUpstreamPluginKinds(t *testing.T) {
	run := "kinds-" + rand.String(4)
	startCore(t, run, map[string]any{})
	name := "kinds-" + rand.String(5)
	newProfile(t, name, run, "alice@example.org", func(p *kubeflowv1.Profile) {
		p.Spec.Plugins = []kubeflowv1.Plugin{
			{TypeMeta: metav1.TypeMeta{Kind: "WorkloadIdentity"}, Spec: &runtime.RawExtension{Raw: []byte(`{"gcpServiceAccount":"sa@project.iam.gserviceaccount.com"}`)}},
			{TypeMeta: metav1.TypeMeta{Kind: "AwsIamForServiceAccount"}, Spec: &runtime.RawExtension{Raw: []byte(`{"awsIamRole":"arn:aws:iam::123456789012:role/x"}`)}},
		}
	})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "7 objects in sync")
	var p kubeflowv1.Profile
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(p.Status.Conditions, func(c kubeflowv1.ProfileCondition) bool { return c.Status != plugins.ConditionTrue }); i >= 0 {
		t.Errorf("condition %+v, want every condition True", p.Status.Conditions[i])
	}
}
