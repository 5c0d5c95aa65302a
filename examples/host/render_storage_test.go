package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// TestRenderStorageOffline renders the StatCan-style storage configuration:
// the PersistentVolumes and claims come out without any Azure or OPA call,
// and render says which calls it skipped.
func TestRenderStorageOffline(t *testing.T) {
	code, out, stderr := runMain(t.Context(), "render", "--config", "config/statcan-storage.yaml", "-f", "testdata/statcan-storage-profile.yaml")
	if code != 0 {
		t.Fatalf("render: exit %d\n%s", code, stderr)
	}
	var got []string
	for _, doc := range strings.Split(out, "---\n") {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
			Spec struct {
				AccessModes []string `json:"accessModes"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil || obj.Kind == "" {
			continue
		}
		got = append(got, obj.Kind+" "+obj.Metadata.Namespace+"/"+obj.Metadata.Name+" "+strings.Join(obj.Spec.AccessModes, ","))
	}
	slices.Sort(got)
	want := []string{
		"PersistentVolume /census-team.protected-b ReadWriteMany",
		"PersistentVolume /census-team.standard ReadWriteMany",
		"PersistentVolume /census-team.standard-ro ReadOnlyMany",
		"PersistentVolumeClaim census-team/protected-b ReadWriteMany",
		"PersistentVolumeClaim census-team/standard ReadWriteMany",
		"PersistentVolumeClaim census-team/standard-ro ReadOnlyMany",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rendered objects (-want +got):\n%s", diff)
	}
	for _, call := range []string{"AzureBlob owned-container/standard", "AzureBlob owned-container/protected-b", "OPA grants/unclassified"} {
		if !strings.Contains(stderr, "skipped outside call "+call+" ") {
			t.Errorf("render does not say it skipped %q:\n%s", call, stderr)
		}
	}
	// protected-b's grants come from a ConfigMap, not from OPA.
	if strings.Contains(stderr, "OPA grants/protected-b") {
		t.Errorf("render says it skipped a call to OPA for the ConfigMap source protected-b:\n%s", stderr)
	}
	t.Logf("render notes:\n%s", stderr)
}

// TestRenderStorageServicePrincipal renders the StatCan-style storage
// configuration with the Protected B grants ConfigMap as input: the bucket
// whose grant names a principal (spn) mounts with the driver's spn
// attributes and that principal's Secret; the bucket whose grant names none,
// and the Profile's own volumes, mount with the account key as before. The
// whole output is kept in testdata/statcan-storage-spn.golden.yaml.
func TestRenderStorageServicePrincipal(t *testing.T) {
	code, out, stderr := runMain(t.Context(), "render", "--config", "config/statcan-storage.yaml",
		"-f", "testdata/statcan-storage-profile.yaml", "-f", "testdata/statcan-storage-grants.yaml")
	if code != 0 {
		t.Fatalf("render: exit %d\n%s", code, stderr)
	}
	type csi struct {
		VolumeAttributes   map[string]string `json:"volumeAttributes"`
		NodeStageSecretRef map[string]string `json:"nodeStageSecretRef"`
	}
	got := map[string]csi{}
	for _, doc := range strings.Split(out, "---\n") {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				CSI csi `json:"csi"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil || obj.Kind != "PersistentVolume" {
			continue
		}
		got[obj.Metadata.Name] = obj.Spec.CSI
	}
	accountKey := func(account string) csi {
		return csi{NodeStageSecretRef: map[string]string{"name": account, "namespace": "azure-blob-csi-system"}}
	}
	cases := []struct {
		reason, pv string
		want       csi
	}{{
		reason: "a bucket whose grant names the Protected B principal",
		pv:     "census-team.census-pb",
		want: csi{
			VolumeAttributes: map[string]string{
				"AzureStorageAuthType": "spn", "AzureStorageSPNClientID": "00000000-0000-0000-0000-00000000000b",
				"AzureStorageSPNTenantID": "00000000-0000-0000-0000-0000000000f0", "AzureStorageAADEndpoint": "https://login.microsoftonline.com/",
			},
			NodeStageSecretRef: map[string]string{"name": "fdi-protected-b-spn", "namespace": "azure-blob-csi-system"},
		},
	}, {
		reason: "a bucket whose grant names no principal keeps the account key",
		pv:     "census-team.scratch-pb",
		want:   accountKey("aawdevcc00samgprotb"),
	}, {
		reason: "the Profile's own volume keeps the account key",
		pv:     "census-team.standard",
		want:   accountKey("aawdevcc00samgpremium"),
	}}
	spnKeys := []string{"AzureStorageAuthType", "AzureStorageSPNClientID", "AzureStorageSPNTenantID", "AzureStorageAADEndpoint"}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			g, ok := got[c.pv]
			if !ok {
				t.Fatalf("no PersistentVolume %s in the output", c.pv)
			}
			// Only the mount's fields: the container's attributes are the
			// golden file's to check.
			var attrs map[string]string
			for _, k := range spnKeys {
				if v, ok := g.VolumeAttributes[k]; ok {
					if attrs == nil {
						attrs = map[string]string{}
					}
					attrs[k] = v
				}
			}
			if diff := cmp.Diff(c.want, csi{VolumeAttributes: attrs, NodeStageSecretRef: g.NodeStageSecretRef}); diff != "" {
				t.Errorf("mount of %s (-want +got):\n%s", c.pv, diff)
			}
		})
	}
	golden := filepath.Join("testdata", "statcan-storage-spn.golden.yaml")
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("render differs from %s (-want +got):\n%s", golden, diff)
	}
}
