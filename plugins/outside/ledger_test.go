package outside_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// A Ledger grants within its window whatever process asks (a restart is a
// new Ledger value), and grants nothing from a record that is not the
// plugin's or does not decode.
func TestLedger(t *testing.T) {
	ctx := t.Context()
	ns := recordsNamespace(t)
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	ledger := func(name string, at time.Time) outside.Ledger {
		return outside.Ledger{Reader: env.Client, Writer: env.Client, Key: client.ObjectKey{Namespace: ns, Name: name},
			Kind: "sweeper", Max: 3, Window: time.Hour, Now: func() time.Time { return at }}
	}

	if got, err := ledger("counts", now).TakeUpTo(ctx, 2); err != nil || got != 2 {
		t.Fatalf("first TakeUpTo(2) = %d, %v; want 2", got, err)
	}
	// A new process within the window: one left.
	if ok, err := ledger("counts", now.Add(time.Minute)).TakeAll(ctx, 2); err != nil || ok {
		t.Errorf("TakeAll(2) with one left = %t, %v; want false", ok, err)
	}
	if got, err := ledger("counts", now.Add(time.Minute)).TakeUpTo(ctx, 2); err != nil || got != 1 {
		t.Errorf("TakeUpTo(2) with one left = %d, %v; want 1", got, err)
	}
	if got, _ := ledger("counts", now.Add(2*time.Minute)).TakeUpTo(ctx, 1); got != 0 {
		t.Errorf("TakeUpTo(1) with none left = %d, want 0", got)
	}
	if ok, err := ledger("counts", now.Add(61*time.Minute)).TakeAll(ctx, 2); err != nil || !ok {
		t.Errorf("TakeAll(2) once the first two left the window = %t, %v; want true", ok, err)
	}
	if ok, err := ledger("counts", now.Add(62*time.Minute)).TakeAll(ctx, 1); err != nil || !ok {
		t.Errorf("TakeAll(1) with one left = %t, %v; want true: the last of the window", ok, err)
	}

	// A ledger the host did not place (a blobcsi host that offers no
	// storage instance and names no deleteRecord) grants nothing and
	// writes nothing, rather than asking the API server for a ConfigMap
	// in no namespace.
	for _, key := range []client.ObjectKey{{Name: "nowhere"}, {Namespace: ns}} {
		unplaced := ledger("", now)
		unplaced.Key = key
		got, err := unplaced.TakeUpTo(ctx, 1)
		if got != 0 || !plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != outside.ReasonLedger {
			t.Errorf("a ledger at %q/%q: TakeUpTo = %d, %v; want 0 and a terminal %s", key.Namespace, key.Name, got, err, outside.ReasonLedger)
		}
	}
	var none corev1.ConfigMapList
	if err := env.Client.List(ctx, &none, client.MatchingLabels{plugins.LabelRole: outside.RoleLedger}); err != nil {
		t.Fatal(err)
	}
	for _, cm := range none.Items {
		if cm.Name == "nowhere" {
			t.Errorf("a ledger with no namespace wrote %s/%s", cm.Namespace, cm.Name)
		}
	}

	for _, tc := range []struct {
		reason string
		cm     corev1.ConfigMap
		want   string
	}{
		{"another's ConfigMap of the name", corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "foreign"}, Data: map[string]string{"actions.json": "[]"}}, plugins.ReasonConflict},
		{"a record that does not decode", corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "garbled", Labels: plugins.OwnershipLabels("sweeper", "")}, Data: map[string]string{"actions.json": "{"}}, outside.ReasonLedger},
	} {
		cm := tc.cm
		cm.Namespace = ns
		if err := env.Client.Create(ctx, &cm); err != nil {
			t.Fatal(err)
		}
		got, err := ledger(cm.Name, now).TakeUpTo(ctx, 1)
		if got != 0 || !plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != tc.want {
			t.Errorf("%s: TakeUpTo = %d, %v; want 0 and a terminal %s", tc.reason, got, err, tc.want)
		}
		// Asking for nothing is granted without a look at the ledger: a
		// pass with nothing to delete is not held up by one it cannot use.
		if ok, err := ledger(cm.Name, now).TakeAll(ctx, 0); !ok || err != nil {
			t.Errorf("%s: TakeAll(0) = %t, %v; want true and no error", tc.reason, ok, err)
		}
		var after corev1.ConfigMap
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&cm), &after); err != nil || after.ResourceVersion != cm.ResourceVersion {
			t.Errorf("%s: the ConfigMap was written (%v)", tc.reason, err)
		}
	}
}

func TestConfigMapRefValidate(t *testing.T) {
	for _, tc := range []struct {
		reason string
		ref    outside.ConfigMapRef
		want   []string // what the error names; none for a valid ref
	}{
		{reason: "unset: the host's default", ref: outside.ConfigMapRef{}},
		{reason: "a namespace and a name", ref: outside.ConfigMapRef{Namespace: "profilekit-system", Name: "volumes.sweep"}},
		{reason: "a namespace is a DNS label", ref: outside.ConfigMapRef{Namespace: "kube.system", Name: "ledger"}, want: []string{`namespace "kube.system"`}},
		{reason: "a name is a DNS subdomain", ref: outside.ConfigMapRef{Name: "Ledger_1"}, want: []string{`name "Ledger_1"`}},
		{reason: "both wrong: both named", ref: outside.ConfigMapRef{Namespace: "A", Name: "B"}, want: []string{`namespace "A"`, `name "B"`}},
	} {
		err := tc.ref.Validate()
		if (err != nil) != (len(tc.want) > 0) {
			t.Errorf("%s: Validate(%+v) = %v, want an error naming %q", tc.reason, tc.ref, err, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Validate(%+v) = %v, want it to name %s", tc.reason, tc.ref, err, w)
			}
		}
	}
}
