package replicate_test

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/replicate"
)

// The hostile suite of the copies: what a host restart at the worst moment,
// or a tenant that forges our labels, can do to them.

// A source deleted while the host is down is found gone by the first pass
// after the restart: under Retain the copy stays as it was, and the
// condition says why; nothing of the Profile is deleted on a guess.
func TestRestartWhileSourceIsGoneKeepsCopies(t *testing.T) {
	run := "restart-" + rand.String(5)
	src := "src-" + run
	createNamespace(t, src)
	v := secretValue()
	createSecret(t, src, "regcred", nil, map[string]string{"token": v})
	cfg := replicate.NewConfig()
	cfg.Sources = []replicate.Source{nameSource("pull", src, "regcred")}
	name := run + "-a"
	testhost.NewProfile(t, env.Client, name, map[string]string{"run": run})
	var copyUID string
	t.Run("first host", func(t *testing.T) {
		// The host stops when this subtest ends.
		start(t, run, cfg, time.Hour)
		copyUID = string(waitCopy(t, name, "regcred", map[string]string{"token": v}).UID)
	})
	if copyUID == "" {
		t.Fatal("no copy was made")
	}
	s, _ := getSecret(src, "regcred")
	if err := env.Client.Delete(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	start(t, run, cfg, time.Hour)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "Secret "+src+"/regcred not found, copy regcred kept")
	c, err := getSecret(name, "regcred")
	if err != nil || string(c.UID) != copyUID || string(c.Data["token"]) != v {
		t.Fatalf("after the restart the copy is %v (err %v); want the same copy with its data", c.UID, err)
	}
}

// A tenant who labels a Secret in its own namespace as the copy of another
// Profile reaches nothing of that Profile: its copies are made, and the
// forged Secret is neither written nor deleted.
func TestForgedOwnershipInAnotherNamespaceIsIgnored(t *testing.T) {
	run := "forged-" + rand.String(5)
	src := "src-" + run
	createNamespace(t, src)
	v := secretValue()
	createSecret(t, src, "regcred", nil, map[string]string{"token": v})
	cfg := replicate.NewConfig()
	cfg.Sources = []replicate.Source{nameSource("pull", src, "regcred")}
	start(t, run, cfg, 300*time.Millisecond)

	victim, attacker := run+"-victim", run+"-attacker"
	testhost.NewProfile(t, env.Client, attacker, nil)
	forgedLabels := plugins.OwnershipLabels(replicate.Kind, victim)
	forged := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: attacker, Name: "regcred", Labels: maps.Clone(forgedLabels)},
		StringData: map[string]string{"token": "attacker"},
	}
	if err := env.Client.Create(t.Context(), forged); err != nil {
		t.Fatal(err)
	}
	testhost.NewProfile(t, env.Client, victim, map[string]string{"run": run})
	waitCopy(t, victim, "regcred", map[string]string{"token": v})
	testhost.WaitCondition(t, env.Client, victim, condType, plugins.ConditionTrue, "1 object in sync")
	time.Sleep(time.Second)
	got, err := getSecret(attacker, "regcred")
	if err != nil {
		t.Fatalf("the forged Secret is gone: %v", err)
	}
	if string(got.Data["token"]) != "attacker" || got.ResourceVersion != forged.ResourceVersion {
		t.Errorf("the forged Secret in %s was written: token %q, resourceVersion %s -> %s",
			attacker, got.Data["token"], forged.ResourceVersion, got.ResourceVersion)
	}
	if _, ok := got.Annotations[replicate.AnnotationSource]; ok {
		t.Errorf("the forged Secret carries the source annotation: %v", got.Annotations)
	}
}

// A tenant with Kubeflow's rights in its namespace: it cannot read the
// source; what it does to its copy (edit, delete) is put back from the
// source; and a Secret it labels as another Profile's copy, in its own
// namespace, reaches nothing of that Profile.
func TestTenantWithNamespaceRights(t *testing.T) {
	run := "tenant-" + rand.String(5)
	src := "src-" + run
	createNamespace(t, src)
	v := secretValue()
	source := createSecret(t, src, "regcred", nil, map[string]string{"token": v})
	cfg := replicate.NewConfig()
	cfg.Sources = []replicate.Source{nameSource("pull", src, "regcred")}
	start(t, run, cfg, 300*time.Millisecond)
	name := run + "-a"
	testhost.NewProfile(t, env.Client, name, map[string]string{"run": run})
	waitCopy(t, name, "regcred", map[string]string{"token": v})
	tenant := testhost.Tenant(t, env, name)

	if err := tenant.Get(t.Context(), client.ObjectKeyFromObject(source), &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant reads the source: %v, want Forbidden", err)
	}
	t.Run("an edited copy is put back", func(t *testing.T) {
		c := &corev1.Secret{}
		if err := tenant.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "regcred"}, c); err != nil {
			t.Fatal(err)
		}
		c.Data = map[string][]byte{"token": []byte("tenant")}
		if err := tenant.Update(t.Context(), c); err != nil {
			t.Fatalf("the tenant's own update: %v", err)
		}
		waitCopy(t, name, "regcred", map[string]string{"token": v})
	})
	t.Run("a deleted copy is made again", func(t *testing.T) {
		c := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "regcred"}}
		if err := tenant.Delete(t.Context(), c); err != nil {
			t.Fatalf("the tenant's own delete: %v", err)
		}
		waitCopy(t, name, "regcred", map[string]string{"token": v})
	})
	t.Run("a Secret labelled as another Profile's copy", func(t *testing.T) {
		victim := run + "-victim"
		forged := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "forged", Labels: plugins.OwnershipLabels(replicate.Kind, victim),
				Annotations: map[string]string{replicate.AnnotationSource: src + "/regcred"}},
			StringData: map[string]string{"token": "tenant"},
		}
		if err := tenant.Create(t.Context(), forged); err != nil {
			t.Fatalf("the tenant's own create: %v", err)
		}
		testhost.NewProfile(t, env.Client, victim, map[string]string{"run": run})
		waitCopy(t, victim, "regcred", map[string]string{"token": v})
		time.Sleep(time.Second)
		got, err := getSecret(name, "forged")
		if err != nil || got.ResourceVersion != forged.ResourceVersion || string(got.Data["token"]) != "tenant" {
			t.Errorf("the forged Secret was written or deleted (err %v)", err)
		}
	})
}
