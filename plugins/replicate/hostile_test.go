package replicate_test

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

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
	testhost.WaitCondition(t, env.Client, victim, condType, plugins.ConditionTrue, "1 objects in sync")
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
