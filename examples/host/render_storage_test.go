package main

import (
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
		"PersistentVolume /census-team-protected-b ReadWriteMany",
		"PersistentVolume /census-team-standard ReadWriteMany",
		"PersistentVolume /census-team-standard-ro ReadOnlyMany",
		"PersistentVolumeClaim census-team/protected-b ReadWriteMany",
		"PersistentVolumeClaim census-team/standard ReadWriteMany",
		"PersistentVolumeClaim census-team/standard-ro ReadOnlyMany",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rendered objects (-want +got):\n%s", diff)
	}
	for _, call := range []string{"AzureBlob container/standard", "AzureBlob container/protected-b", "OPA"} {
		if !strings.Contains(stderr, "skipped outside call "+call) {
			t.Errorf("render does not say it skipped %q:\n%s", call, stderr)
		}
	}
	t.Logf("render notes:\n%s", stderr)
}
