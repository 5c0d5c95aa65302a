package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/rand"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/examples/host/builtin"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
	"github.com/profilekit/profilekit/plugins/workloadidentity"
)

// TestHostMovesEarlierRecordsAtStart: a host with a plugin that keeps
// outside state, deployed by the chart with the upgrade step's rights (list
// and delete on ConfigMaps in every namespace, for its first start), moves
// the record an earlier version kept in a Profile's namespace into its own,
// keyed by the Profile's UID, as intended and not made; the copy in the
// Profile's namespace is gone. It holds the names of the Profiles that
// such a record names for their owners, and not the name of a Profile
// with none (its first pass of a plugin with outside state holds it); a
// second start, with the chart's rights alone, writes none.
func TestHostMovesEarlierRecordsAtStart(t *testing.T) {
	ctx := t.Context()
	hostNS := "host-" + rand.String(5)
	reg, err := plugins.NewRegistry(builtin.Definitions()...)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := hostconfig.Parse("records.yaml", []byte(`
leaderElection: {id: records-`+hostNS+`, namespace: `+hostNS+`}
shardSelector: {matchLabels: {records-test: `+hostNS+`}}
plugins:
  WorkloadIdentity:
    enabled: listed
    defaults:
      allowedIdentities: [{identity: "{{ .Namespace }}@proj-123.iam.gserviceaccount.com"}]
`), reg)
	if err != nil {
		t.Fatal(err)
	}
	name := "records-" + rand.String(5)
	p := testhost.NewProfile(t, env.Client, name, map[string]string{"records-test": hostNS})
	// A Profile beside it with no record: nothing outside was made under
	// its name.
	plain := "records-plain-" + rand.String(5)
	testhost.NewProfile(t, env.Client, plain, map[string]string{"records-test": hostNS})
	labels := plugins.OwnershipLabels(workloadidentity.Kind, name)
	labels[plugins.LabelRole] = plugins.RoleOutsideState
	old := corev1ac.ConfigMap(outside.StateName(workloadidentity.Kind), name).WithLabels(labels).
		WithData(map[string]string{"state.json": `{"grant/x@proj-123.iam.gserviceaccount.com/m":{"hash":"0123456789abcdef01234567","at":"2026-01-01T00:00:00Z"}}`})
	if err := env.Client.Apply(ctx, old, client.FieldOwner(plugins.FieldManagerFor(workloadidentity.Kind)), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}

	upgrade := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(upgrade, []byte(`rbac: {extraRules: [{apiGroups: [""], resources: [configmaps], verbs: [list, delete]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	first := startHost(t, "records", env.Config, cfg, reg, false, "-f", upgrade)
	var record corev1.ConfigMap
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: hostNS, Name: outside.RecordName(workloadidentity.Kind, p.UID)}, &record)
		return err == nil, fmt.Sprintf("the moved record: %v", err)
	})
	if !strings.Contains(record.Data["state.json"], `"grant/x@proj-123.iam.gserviceaccount.com/m":{"hash":""`) {
		t.Errorf("moved record %s: want the key as intended, not made", record.Data["state.json"])
	}
	// The copy goes after the record is written, not with it.
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: outside.StateName(workloadidentity.Kind)}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err), fmt.Sprintf("the copy in the Profile's namespace: %v, want it gone", err)
	})
	// The mark is written once every record moved.
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: hostNS, Name: outside.RecordsMigratedName}, &corev1.ConfigMap{})
		return err == nil, fmt.Sprintf("no mark that the move is done: %v", err)
	})

	t.Run("the names of existing Profiles are held once", func(t *testing.T) {
		// The Profile lists no plugin: its name is held by the host's
		// start, not by a pass.
		tenure := client.ObjectKey{Namespace: hostNS, Name: outside.TenureName(name)}
		testhost.Eventually(t, 30*time.Second, func() (bool, string) {
			err := env.Client.Get(ctx, tenure, &corev1.ConfigMap{})
			return err == nil, fmt.Sprintf("the tenure of %s: %v", name, err)
		})
		// The names are held in one go: the plain Profile's is not.
		plainTenure := client.ObjectKey{Namespace: hostNS, Name: outside.TenureName(plain)}
		if err := env.Client.Get(ctx, plainTenure, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("the tenure of %s, a Profile no record names: %v, want none", plain, err)
		}
		if err := first.stop(); err != nil {
			t.Fatal(err)
		}
		second := startHost(t, "records-again", env.Config, cfg, reg, false)
		if !second.cache.WaitForCacheSync(ctx) {
			t.Fatal("the second host's cache did not sync")
		}
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			listed := slices.Contains(second.log.all(), "GET /api/v1/namespaces/"+hostNS+"/configmaps")
			return listed, fmt.Sprintf("the second host has not listed the tenures: %q", second.log.all())
		})
		for _, w := range second.log.writes() {
			if strings.Contains(w, "/configmaps") {
				t.Errorf("the second start wrote %s; the names were held already", w)
			}
		}
		if err := env.Client.Get(ctx, plainTenure, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("after the second start, the tenure of %s: %v, want none", plain, err)
		}
		tenures := outside.Tenures{Reader: env.Client, Namespace: hostNS}
		if err := tenures.Check(ctx, p); err != nil {
			t.Errorf("the Profile's own name is refused to it: %v", err)
		}
		// The next owner of the name, had the Profile been deleted and the
		// name chosen again at registration, is refused what the earlier
		// version made under it.
		next := p.DeepCopy()
		next.UID, next.Spec.Owner.Name = "next-"+p.UID, "mallory@example.org"
		var te *outside.TenureError
		if err := tenures.Check(ctx, next); !errors.As(err, &te) {
			t.Errorf("another owner's Profile of the seeded name: %v, want a TenureError", err)
		}
	})
}
