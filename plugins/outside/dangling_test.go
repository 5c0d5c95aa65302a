package outside_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// Grants found as a Profile goes that the plugin did not make are kept in
// a record keyed by the namespace, which refuses every later Profile of
// the name until an administrator deletes it.
func TestDanglingTrustRefusesTheNextProfileOfTheName(t *testing.T) {
	ctx := t.Context()
	c := outsideClient(t)
	key := client.ObjectKey{Namespace: outside.DefaultRecordsNamespace, Name: outside.DanglingName("iam", "team")}
	gone := outside.New(c, "iam", newProfile(nil), outside.Options{})
	if err := gone.ReportDangling(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("a report of no grants: %v, want no record", err)
	}
	if err := gone.ReportDangling(ctx, []string{"role/b trusts team", "role/a trusts team"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"role/a trusts team", "role/b trusts team"}, gone.Dangled()); diff != "" {
		t.Errorf("Dangled (-want +got):\n%s", diff)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, key, &cm); err != nil {
		t.Fatal(err)
	}
	if len(cm.OwnerReferences) != 0 || cm.Labels[plugins.LabelRole] != outside.RoleDanglingTrust || cm.Labels[plugins.LabelPlugin] != "iam" {
		t.Errorf("the record: labels %v, owners %v; want the plugin's dangling-trust record, owned by no Profile", cm.Labels, cm.OwnerReferences)
	}

	next := newProfile(nil)
	next.UID = "u2"
	err := outside.New(c, "iam", next, outside.Options{}).CheckDangling(ctx)
	if !plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != outside.ReasonDanglingTrust {
		t.Fatalf("the next Profile of the name: %v, want a terminal %s", err, outside.ReasonDanglingTrust)
	}
	if want := "role/a trusts team; role/b trusts team"; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("the refusal %q does not end with the grants %q", err, want)
	}
	if err := outside.New(c, "other", next, outside.Options{}).CheckDangling(ctx); err != nil {
		t.Errorf("another plugin: %v, want nil", err)
	}
	if err := outside.NewOffline("iam", next).CheckDangling(ctx); err != nil {
		t.Errorf("offline: %v, want nil", err)
	}
	if err := c.Delete(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	if err := outside.New(c, "iam", next, outside.Options{}).CheckDangling(ctx); err != nil {
		t.Errorf("after the administrator deleted the record: %v, want nil", err)
	}

	// A ConfigMap of the name that is not a dangling-trust record of the
	// plugin's refuses nothing.
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
		Labels: map[string]string{plugins.LabelPlugin: "iam"}}}
	if err := c.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	if err := outside.New(c, "iam", next, outside.Options{}).CheckDangling(ctx); err != nil {
		t.Errorf("beside a ConfigMap of the name that is not a record: %v, want nil", err)
	}
}

func TestDanglingTrustThatCannotBeRecordedIsAnError(t *testing.T) {
	o := outside.New(refusedRecord{outsideClient(t)}, "iam", newProfile(nil), outside.Options{})
	if err := o.ReportDangling(t.Context(), []string{"role/a trusts team"}); !errors.Is(err, errRefused) {
		t.Errorf("ReportDangling, its record refused: %v, want the refusal", err)
	}
	if got := o.Dangled(); len(got) != 0 {
		t.Errorf("Dangled = %v, want none reported", got)
	}
}
