package testhost

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// RecordKey is where plugin kind's outside-state record of p lives.
func RecordKey(kind string, p *kubeflowv1.Profile) client.ObjectKey {
	return client.ObjectKey{Namespace: outside.DefaultRecordsNamespace, Name: outside.RecordName(kind, p.UID)}
}

// WriteRecord writes plugin kind's outside-state record of p with state
// (the record's JSON), as the plugin's host writes it.
func WriteRecord(t *testing.T, c client.Client, kind string, p *kubeflowv1.Profile, state string) {
	t.Helper()
	key := RecordKey(kind, p)
	labels := plugins.OwnershipLabels(kind, p.Name)
	labels[plugins.LabelRole] = plugins.RoleOutsideState
	ac := corev1ac.ConfigMap(key.Name, key.Namespace).WithLabels(labels).
		WithOwnerReferences(plugins.OwnerReference(p)).WithData(map[string]string{"state.json": state})
	if err := c.Apply(t.Context(), ac, client.FieldOwner(plugins.FieldManagerFor(kind)), client.ForceOwnership); err != nil {
		t.Fatalf("write the record of %s: %v", p.Name, err)
	}
}

// ForgeRecord writes, through tenant (see Tenant), a record of plugin kind
// in the old place and form: a ConfigMap in the Profile's namespace with
// profilekit's labels and state (the record's JSON), applied under the
// plugin's own field manager, which any client may send.
func ForgeRecord(t *testing.T, tenant client.Client, kind, profile, state string) {
	t.Helper()
	labels := plugins.OwnershipLabels(kind, profile)
	labels[plugins.LabelRole] = plugins.RoleOutsideState
	ac := corev1ac.ConfigMap(outside.StateName(kind), profile).WithLabels(labels).
		WithData(map[string]string{"state.json": state})
	if err := tenant.Apply(t.Context(), ac, client.FieldOwner(plugins.FieldManagerFor(kind)), client.ForceOwnership); err != nil {
		t.Fatalf("the tenant of %s writes a record: %v", profile, err)
	}
}

// LoseRecord deletes plugin kind's outside-state record of p, as an
// administrator's mistake or a restore without it would.
func LoseRecord(t *testing.T, c client.Client, kind string, p *kubeflowv1.Profile) {
	t.Helper()
	key := RecordKey(kind, p)
	record := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := c.Delete(t.Context(), record); err != nil {
		t.Fatalf("delete the record of %s: %v", p.Name, err)
	}
}

// LoseRecordAndDelete reads the Profile named name, deletes plugin kind's
// outside-state record of it (LoseRecord), and then deletes the Profile:
// its Revoke must then fail closed, without the record that names what
// was granted.
func LoseRecordAndDelete(t *testing.T, c client.Client, kind, name string) {
	t.Helper()
	var p kubeflowv1.Profile
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
		t.Fatalf("read the Profile %s: %v", name, err)
	}
	if p.DeletionTimestamp != nil {
		// Its Revoke may have run with the record still there, and the
		// test would prove nothing about one without it.
		t.Fatalf("the Profile %s is being deleted already; the record must be lost first", name)
	}
	LoseRecord(t, c, kind, &p)
	if err := c.Delete(t.Context(), &p); err != nil {
		t.Fatalf("delete the Profile %s: %v", name, err)
	}
}
