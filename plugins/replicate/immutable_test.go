package replicate_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/replicate"
)

// A Secret's type cannot change in place. A source recreated with another
// type must reach its copies: the copy, ours and mounted by name only, is
// replaced, and the condition comes back to True.
func TestSourceRecreatedWithAnotherType(t *testing.T) {
	run := "retype-" + rand.String(5)
	src := "src-" + run
	createNamespace(t, src)
	v := secretValue()
	createSecret(t, src, "regcred", nil, map[string]string{"token": v})
	cfg := replicate.NewConfig()
	cfg.Sources = []replicate.Source{nameSource("pull", src, "regcred")}
	start(t, run, cfg, 300*time.Millisecond)
	name := run + "-a"
	testhost.NewProfile(t, env.Client, name, map[string]string{"run": run})
	old := waitCopy(t, name, "regcred", map[string]string{"token": v})
	if old.Type != corev1.SecretTypeOpaque {
		t.Fatalf("copy type = %q, want Opaque", old.Type)
	}

	s, _ := getSecret(src, "regcred")
	if err := env.Client.Delete(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	v2 := secretValue()
	retyped := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "regcred"},
		Type: "example.org/token", StringData: map[string]string{"token": v2}}
	if err := env.Client.Create(t.Context(), retyped); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		c, err := getSecret(name, "regcred")
		if err != nil {
			return false, err.Error()
		}
		return c.Type == "example.org/token" && string(c.Data["token"]) == v2,
			fmt.Sprintf("copy has type %q and the old value %t", c.Type, string(c.Data["token"]) == v)
	})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "1 object in sync")
}
