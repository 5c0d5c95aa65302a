package reconcilers_test

import (
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/reconcilers"
)

// warnings collects the warnings the API server returns.
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, text)
}

func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.got, "; ")
}

// TestLeanApplies sends the same apply, with a field the API server does
// not know, through a plain config and a lean one: both apply what is
// known, only the plain one is checked (the warning), and a create through
// the lean config is still checked.
func TestLeanApplies(t *testing.T) {
	ctx := t.Context()
	const ns = "lean-applies"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	newClient := func(cfg *rest.Config) (client.Client, *warnings) {
		w := &warnings{}
		cfg = rest.CopyConfig(cfg)
		cfg.WarningHandler = w
		c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		return c, w
	}
	// A body with a key twice: only the strict decoding, the one that
	// LeanApplies spares, notices it.
	apply := func(c client.Client, name string) {
		t.Helper()
		body := `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "` + name + `", "namespace": "` + ns + `"}, "data": {"k": "v", "k": "v"}}`
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := c.Patch(ctx, cm, client.RawPatch(types.ApplyPatchType, []byte(body)), client.FieldOwner("lean-test"), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
			t.Fatal(err)
		}
		if cm.Data["k"] != "v" {
			t.Errorf("%s: data = %v, want k=v applied", name, cm.Data)
		}
	}

	plain, plainWarnings := newClient(env.Config)
	apply(plain, "plain")
	if !strings.Contains(plainWarnings.String(), "already set") {
		t.Fatalf("the plain apply got warnings %q, want one about the duplicate field: the API server no longer checks applies by default, and LeanApplies saves nothing", plainWarnings)
	}

	lean, leanWarnings := newClient(reconcilers.LeanApplies(env.Config))
	apply(lean, "lean")
	if got := leanWarnings.String(); got != "" {
		t.Errorf("the lean apply got warnings %q, want none: the API server still checked it", got)
	}

	create := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "created", "namespace": ns},
		"unknown":  "dropped",
	}}
	if err := lean.Create(ctx, create); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(leanWarnings.String(), "unknown field") {
		t.Errorf("a create through the lean config got warnings %q, want the API server's check as usual", leanWarnings)
	}
}
