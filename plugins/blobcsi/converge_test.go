package blobcsi_test

// This file holds the tests of Profiles converging: a container, PV and
// claim per instance and grant, a grant change that reaches only the Profiles
// it concerns, and resyncs that send nothing.

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/blobcsi"
	"github.com/profilekit/profilekit/reconcilers"
)

func TestProfileVolumesAndGrants(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, b, c := unique("team-a"), unique("team-b"), unique("team-c")
	putGrants(t, grantsDoc{
		Classifications: []string{"unclassified"},
		Teams:           map[string][]string{"census": {a, b}, "labour": {c}},
		Buckets: map[string]map[string]any{
			"census-shared": {"classification": "unclassified", "readers": []string{"labour"}, "writers": []string{"census"}, "spn": "sp-census"},
		},
	})
	h := start(t, hostConfig(t, nil), reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin("standard", "standard-ro"))
	h.profile(t, b, blobPlugin())
	h.profile(t, c, blobPlugin("protected-b"))

	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany", "standard-ro": "ReadOnlyMany", "census-shared": "ReadWriteMany"})
	waitClaims(t, b, map[string]string{"standard": "ReadWriteMany", "census-shared": "ReadWriteMany"})
	waitClaims(t, c, map[string]string{"protected-b": "ReadWriteMany", "census-shared": "ReadOnlyMany"})
	for _, n := range []string{a, b, c} {
		testhost.WaitCondition(t, env.Client, n, condType, plugins.ConditionTrue, "")
	}

	t.Run("containers exist in the account, one per Profile", func(t *testing.T) {
		got := containers(t)
		for _, n := range []string{a, b, c} {
			if !slices.Contains(got, n) {
				t.Errorf("container %s missing from %v", n, got)
			}
		}
		t.Logf("containers listed through azblob: %v", got)
	})

	t.Run("the PV and claim of a read-only instance", func(t *testing.T) {
		v, err := pv(t, a+".standard-ro")
		if err != nil {
			t.Fatal(err)
		}
		want := corev1.PersistentVolumeSpec{
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			MountOptions:                  []string{"-o ro"},
		}
		got := corev1.PersistentVolumeSpec{AccessModes: v.Spec.AccessModes, PersistentVolumeReclaimPolicy: v.Spec.PersistentVolumeReclaimPolicy, MountOptions: v.Spec.MountOptions}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("PV spec (-want +got):\n%s", diff)
		}
		csi := v.Spec.CSI
		if csi == nil || csi.Driver != blobcsi.Driver || !csi.ReadOnly || csi.VolumeAttributes["containerName"] != a ||
			csi.VolumeAttributes["storageAccount"] != azurite.Account || csi.NodeStageSecretRef == nil || csi.NodeStageSecretRef.Name != secret {
			t.Errorf("csi = %+v", csi)
		}
		if ref := v.Spec.ClaimRef; ref == nil || ref.Namespace != a || ref.Name != "standard-ro" {
			t.Errorf("claimRef = %+v", ref)
		}
		pvc := claims(t, a)["standard-ro"]
		if pvc.Spec.VolumeName != v.Name || pvc.Labels["automount.example.org/blob"] != "true" || !plugins.IsOwnedBy(pvc.Labels, blobcsi.Kind, a) {
			t.Errorf("claim = %+v", pvc.ObjectMeta.Labels)
		}
	})

	t.Run("volume handles are unique", func(t *testing.T) {
		var l corev1.PersistentVolumeList
		if err := env.Client.List(ctx, &l, client.MatchingLabels{plugins.LabelPlugin: blobcsi.Kind}); err != nil {
			t.Fatal(err)
		}
		seen := map[string]string{}
		for _, v := range l.Items {
			if other, dup := seen[v.Spec.CSI.VolumeHandle]; dup {
				t.Errorf("PVs %s and %s share the volume handle %s", other, v.Name, v.Spec.CSI.VolumeHandle)
			}
			seen[v.Spec.CSI.VolumeHandle] = v.Name
		}
	})

	t.Run("a grant change reaches only the Profiles it concerns within one poll interval", func(t *testing.T) {
		before := h.applies.settled(t, a, b, c)
		changed := time.Now()
		// A new bucket that only team-c's team reads: only c's grants change.
		putGrants(t, grantsDoc{
			Classifications: []string{"unclassified"},
			Teams:           map[string][]string{"census": {a, b}, "labour": {c}},
			Buckets: map[string]map[string]any{
				"census-shared": {"classification": "unclassified", "readers": []string{"labour"}, "writers": []string{"census"}, "spn": "sp-census"},
				"labour-shared": {"classification": "unclassified", "readers": []string{"labour"}, "spn": "sp-labour"},
			},
		})
		waitClaims(t, c, map[string]string{"protected-b": "ReadWriteMany", "census-shared": "ReadOnlyMany", "labour-shared": "ReadOnlyMany"})
		took := time.Since(changed)
		t.Logf("the new claim of %s was there %s after the change (poll interval %s)", c, took.Round(time.Millisecond), pollEvery)
		// One poll interval until the poller sees it, then one reconcile.
		if took > pollEvery+2*time.Second {
			t.Errorf("the change took %s to reach %s, want about one poll interval (%s)", took, c, pollEvery)
		}
		time.Sleep(2 * pollEvery)
		after := h.applies.counts(a, b, c)
		if after[a] != before[a] || after[b] != before[b] {
			t.Errorf("Profiles without a change were reconciled: before %v, after %v", before, after)
		}
		if after[c] == before[c] {
			t.Errorf("%s was not reconciled", c)
		}
		t.Logf("reconciles caused by the change: %s=%d %s=%d %s=%d", a, after[a]-before[a], b, after[b]-before[b], c, after[c]-before[c])
	})
}

// TestResyncSendsNothing: once a Profile's containers and volumes exist,
// passes send no mutating request to the API server and no request at all
// to Azure.
func TestResyncSendsNothing(t *testing.T) {
	t.Parallel()
	a, b := unique("team-a"), unique("team-b")
	putGrants(t, grantsDoc{
		Classifications: []string{"unclassified"},
		Teams:           map[string][]string{"census": {a}, "labour": {b}},
		Buckets: map[string]map[string]any{
			"census-shared": {"classification": "unclassified", "readers": []string{"labour"}, "writers": []string{"census"}, "spn": "sp-census"},
		},
	})
	h := start(t, hostConfig(t, nil), reconcilers.WithResync(300*time.Millisecond))
	h.profile(t, a, blobPlugin("standard", "standard-ro", "protected-b"))
	h.profile(t, b, blobPlugin())
	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany", "standard-ro": "ReadOnlyMany", "protected-b": "ReadWriteMany", "census-shared": "ReadWriteMany"})
	waitClaims(t, b, map[string]string{"standard": "ReadWriteMany", "census-shared": "ReadOnlyMany"})
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	testhost.WaitCondition(t, env.Client, b, condType, plugins.ConditionTrue, "")
	first := h.azure.take()
	t.Logf("Azure requests to converge (2 Profiles, 4 containers): %d", len(first))
	before := h.applies.counts(a, b)
	writes := h.host.ResyncWrites(t, 3, blobcsi.Kind)
	azure := h.azure.take()
	after := h.applies.counts(a, b)
	if len(writes) != 0 {
		t.Errorf("mutating requests on resync = %v, want none", writes)
		for _, e := range testhost.Events(t, env.Client, a, b) {
			t.Log(e)
		}
	}
	if len(azure) != 0 {
		t.Errorf("Azure requests on resync = %v, want none", azure)
	}
	t.Logf("resync passes: %s=%d %s=%d; mutating requests %d; Azure requests %d",
		a, after[a]-before[a], b, after[b]-before[b], len(writes), len(azure))
}
