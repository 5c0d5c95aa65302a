package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
)

// kfamUser is the identity of Kubeflow's access-management service in
// Kubeflow's manifests, which creates Profiles for users who register, as
// they sent them, with cluster-admin's rights.
const kfamUser = "system:serviceaccount:kubeflow:profiles-controller-service-account"

// TestOnlyOperatorsPause installs the deployment's pause policy and tries
// profilekit.dev/paused as everyone who writes Profiles: a self-serve user
// with write rights on Profiles (where a platform lets tenants write their
// own), Kubeflow's access-management service acting for a registering
// user, an operator granted the policy's ClusterRole, and cluster-admin.
// Only the last two may set, change or remove it; everyone may edit the
// rest of a Profile, paused or not.
func TestOnlyOperatorsPause(t *testing.T) {
	ctx := t.Context()
	suffix := rand.String(5)
	role := installPausePolicy(t, suffix)

	selfServe := userWith(t, "self-serve-"+suffix, nil, profileWriter(t, "self-serve-"+suffix))
	operator := userWith(t, "operator-"+suffix, nil, profileWriter(t, "operator-"+suffix), role)
	kfam := userWith(t, kfamUser, []string{"system:serviceaccounts", "system:serviceaccounts:kubeflow"}, "cluster-admin")
	admin := env.Client

	profile := func(name, paused string) *kubeflowv1.Profile {
		p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + suffix}}
		p.Spec.Owner = rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name + "@example.org"}
		if paused != "" {
			p.Annotations = map[string]string{plugins.AnnotationPaused: paused}
		}
		t.Cleanup(func() { _ = admin.Delete(context.Background(), p) }) //nolint:forbidigo // cleanups run after t.Context is canceled
		return p
	}
	refused := func(who string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only an operator may set, change or remove the annotation "+plugins.AnnotationPaused) {
			t.Errorf("%s: want Forbidden by the pause policy, got %v", who, err)
			return
		}
		t.Logf("%s: refused", who)
	}
	allowed := func(who string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: want it allowed, got %v", who, err)
			return
		}
		t.Logf("%s: allowed", who)
	}
	setPaused := func(c client.Client, name, value string) error {
		p := &kubeflowv1.Profile{}
		if err := admin.Get(ctx, client.ObjectKey{Name: name + "-" + suffix}, p); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(p.DeepCopy())
		if value == "" {
			delete(p.Annotations, plugins.AnnotationPaused)
		} else {
			p.SetAnnotations(map[string]string{plugins.AnnotationPaused: value})
		}
		return c.Patch(ctx, p, patch)
	}
	relabel := func(c client.Client, name string) error {
		p := &kubeflowv1.Profile{}
		if err := admin.Get(ctx, client.ObjectKey{Name: name + "-" + suffix}, p); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(p.DeepCopy())
		p.SetLabels(map[string]string{"team": rand.String(4)})
		return c.Patch(ctx, p, patch)
	}

	refused("self-serve user creating a paused Profile", selfServe.Create(ctx, profile("ss-born-paused", "true")))
	refused("access-management service creating a paused Profile for a user", kfam.Create(ctx, profile("kfam-born-paused", "quotas")))
	allowed("access-management service creating an unpaused Profile", kfam.Create(ctx, profile("kfam", "")))
	refused("access-management service pausing it", setPaused(kfam, "kfam", "true"))

	allowed("self-serve user creating an unpaused Profile", selfServe.Create(ctx, profile("ss", "")))
	refused("self-serve user pausing it", setPaused(selfServe, "ss", "true"))
	allowed("self-serve user editing its labels", relabel(selfServe, "ss"))

	allowed("operator pausing it", setPaused(operator, "ss", "quotas"))
	allowed("self-serve user editing the labels of the paused Profile", relabel(selfServe, "ss"))
	refused("self-serve user widening the pause", setPaused(selfServe, "ss", "true"))
	refused("self-serve user lifting the pause", setPaused(selfServe, "ss", ""))
	allowed("operator lifting the pause", setPaused(operator, "ss", ""))

	allowed("cluster-admin creating a paused Profile", admin.Create(ctx, profile("admin", "true")))
	allowed("cluster-admin lifting it", setPaused(admin, "admin", ""))

	p := &kubeflowv1.Profile{}
	if err := admin.Get(ctx, client.ObjectKey{Name: "ss-" + suffix}, p); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Annotations[plugins.AnnotationPaused]; ok || p.Labels["team"] == "" {
		t.Errorf("Profile ss: annotations %v, labels %v; want no pause and the self-serve user's label", p.Annotations, p.Labels)
	}
}

// installPausePolicy creates the pause policy, its binding and its
// ClusterRole as the kustomize base ships them, named apart by suffix, and
// returns the ClusterRole's name once the API server enforces the policy.
func installPausePolicy(t *testing.T, suffix string) (role string) {
	t.Helper()
	data, err := os.ReadFile(deployDir + "/base/pause-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeObjects(t, "pause-policy.yaml", data)
	if len(objs) != 3 {
		t.Fatalf("pause-policy.yaml holds %d objects, want the policy, its binding and its ClusterRole", len(objs))
	}
	for _, u := range objs {
		name := u.GetName() + "-" + suffix
		u.SetName(name)
		switch u.GetKind() {
		case "ValidatingAdmissionPolicyBinding":
			if err := unstructured.SetNestedField(u.Object, name, "spec", "policyName"); err != nil {
				t.Fatal(err)
			}
		case "ClusterRole":
			role = name
		}
		if err := env.Client.Create(t.Context(), u); err != nil {
			t.Fatalf("create %s %s: %v", u.GetKind(), name, err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), u) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	}
	// The API server loads a new policy in the background: wait until a
	// user without the verb is refused.
	probe := userWith(t, "probe-"+suffix, nil, profileWriter(t, "probe-"+suffix))
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "probe-" + suffix, Annotations: map[string]string{plugins.AnnotationPaused: "true"}}}
		err := probe.Create(t.Context(), p)
		if err == nil {
			_ = env.Client.Delete(t.Context(), p)
		}
		return apierrors.IsForbidden(err), fmt.Sprintf("a paused Profile's create was answered %v", err)
	})
	return role
}

// profileWriter makes a ClusterRole that lets its holder create and edit
// Profiles, as a platform whose tenants write their own grants them, and
// returns its name.
func profileWriter(t *testing.T, name string) string {
	t.Helper()
	r := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{kubeflowv1.GroupVersion.Group}, Resources: []string{"profiles"}, Verbs: []string{"get", "list", "create", "update", "patch"}}},
	}
	if err := env.Client.Create(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), r) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	return name
}

// userWith returns a client that acts as user (in groups, and
// system:authenticated), bound to each of the ClusterRoles roles.
func userWith(t *testing.T, user string, groups []string, roles ...string) client.Client {
	t.Helper()
	for _, role := range roles {
		b := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "test-" + rand.String(8)},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		}
		if err := env.Client.Create(t.Context(), b); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), b) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHelmPausePolicyIsTheBases renders the chart's pause policy and
// compares it with the kustomize base's, so that both deployments enforce
// the same rule.
func TestHelmPausePolicyIsTheBases(t *testing.T) {
	data, err := os.ReadFile(deployDir + "/base/pause-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base := map[string]*unstructured.Unstructured{}
	for _, u := range decodeObjects(t, "pause-policy.yaml", data) {
		base[u.GetKind()] = u
	}
	// Folded YAML strings compare by their words.
	words := cmp.Transformer("words", func(s string) string { return strings.Join(strings.Fields(s), " ") })
	var got int
	for _, u := range helmTemplate(t) {
		want, ok := base[u.GetKind()]
		if !ok || !strings.HasSuffix(u.GetName(), "-pause") {
			continue
		}
		got++
		if u.GetName() != want.GetName() {
			t.Errorf("%s named %s, the base's %s", u.GetKind(), u.GetName(), want.GetName())
		}
		for _, field := range []string{"spec", "rules"} {
			w, _, _ := unstructured.NestedFieldNoCopy(want.Object, field)
			g, _, _ := unstructured.NestedFieldNoCopy(u.Object, field)
			if diff := cmp.Diff(w, g, words); diff != "" {
				t.Errorf("the chart's %s differs from the base's (-base +chart):\n%s", u.GetKind(), diff)
			}
		}
	}
	if got != len(base) {
		t.Errorf("the chart renders %d of the base's %d pause objects", got, len(base))
	}
	for _, u := range helmTemplate(t, "--set", "pausePolicy.enabled=false") {
		if strings.HasSuffix(u.GetName(), "-pause") {
			t.Errorf("pausePolicy.enabled=false still renders %s %s", u.GetKind(), u.GetName())
		}
	}
}
