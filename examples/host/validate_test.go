package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profilekit/profilekit/plugins"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		reason   string
		profile  string
		wantCode int
		wantOut  []string
		wantErr  []string
	}{
		{
			reason: "an unknown field is denied with the condition's message", profile: "testdata/invalid-spec.yaml", wantCode: 1,
			wantOut: []string{"profile bad-spec: denied", `QuotasReady would be False: InvalidSpec: spec.plugins[0] (quotas).spec: unknown field "hardd"`},
		},
		{
			reason: "a value above the cap is denied", profile: "testdata/invalid-cap.yaml", wantCode: 1,
			wantOut: []string{"profile over-cap: denied", "QuotasReady would be False: InvalidSpec: spec.plugins[0] (quotas).spec: hard[limits.cpu]: limits.cpu 128 is above the cap 64"},
		},
		{
			reason: "a bad override label is denied", profile: "testdata/invalid-label.yaml", wantCode: 1,
			wantOut: []string{"profile bad-label: denied", `QuotasReady would be False: InvalidLabel: label quotas.profilekit.dev/limits.cpu="lots": not a quantity`},
		},
		{
			reason: "more access than the host allows is denied, each plugin naming what it refuses", profile: "testdata/invalid-access.yaml", wantCode: 1,
			wantOut: []string{
				"profile over-reach: denied",
				`CoreReady would be False: InvalidSpec: spec.owner: group "*": Istio would read the "*" as a wildcard`,
				`AuthpolicyReady would be False: InvalidSpec: spec.owner: group "*"`,
				`spec.contributors[0] (User "mallory@example.org", role "admin"): role admin is not among the roles the host allows (edit, view)`,
				`spec.contributors[1] (User "eve@elsewhere.example", role "edit"): user "eve@elsewhere.example" matches none of the host's user domains (*@example.org)`,
				"NamespacemetaReady would be False: InvalidSpec: refused, the namespace is left as it is: labels[kubernetes.io/metadata.name]: the kubernetes.io prefix is Kubernetes' own",
			},
		},
		{reason: "a group-owned Profile with contributors and namespace labels is admitted", profile: "../profiles/team-ml.yaml", wantOut: []string{"profile team-ml: admitted"}},
		{
			reason: "an unknown plugin is admitted with a warning", profile: "testdata/unknown-plugin.yaml",
			wantOut: []string{"profile lists-unknown: admitted"},
			wantErr: []string{"warning: profile lists-unknown: spec.plugins[0] (sparkles): this host runs no such plugin; it is ignored"},
		},
		{reason: "a sample Profile is admitted", profile: "../profiles/team-a.yaml", wantOut: []string{"profile team-a: admitted"}},
		{reason: "a v1beta1 Profile is read as the API server reads it", profile: "testdata/v1beta1-profile.yaml", wantOut: []string{"profile legacy-team: admitted"}},
		{reason: "a folder is read as kubectl reads one: its manifests, in name order", profile: "../profiles/",
			wantOut: []string{"profile sandbox: admitted\nprofile team-a: admitted\nprofile team-b: admitted\n"}},
		{reason: "a folder without manifests is an error", profile: "internal", wantCode: 1,
			wantErr: []string{"folder internal holds no .yaml, .yml or .json file"}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			code, out, stderr := runMain(t.Context(), "validate", "--config", hostConfig, "-f", tc.profile)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.wantCode, stderr)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout does not contain %q:\n%s", w, out)
				}
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestRenderV1beta1(t *testing.T) {
	code, out, stderr := runMain(t.Context(), "render", "--config", hostConfig, "-f", "testdata/v1beta1-profile.yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{"kind: ResourceQuota", "namespace: legacy-team", "apiVersion: kubeflow.org/v1\n    blockOwnerDeletion: true"} {
		if !strings.Contains(out, w) {
			t.Errorf("output does not contain %q:\n%s", w, out)
		}
	}
}

// HostileSpecs are quotas specs built to hurt: the wrong JSON type, 50,000
// keys the API server would refuse, a value nested 5,000 levels deep. Each
// must be refused with a bounded message that names the field.
var HostileSpecs = []struct {
	Name, Spec string
	Want       []string
}{
	{"array", `[1,2,3]`, []string{"spec.plugins[0] (quotas).spec: must be an object, got an array"}},
	{"string", `"hard: {cpu: 1}"`, []string{"spec.plugins[0] (quotas).spec: must be an object, got a string"}},
	{"invalid-keys", invalidKeys(50000), []string{"spec.plugins[0] (quotas).spec: hard[bad_00000]: not a resource a quota can limit", "(and 49995 more problems)"}},
	{"deep-nesting", `{"hard":{"cpu":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000) + `}}`, []string{`spec.plugins[0] (quotas).spec: field "hard[cpu]": {"a":{"a":`, "is not a quantity"}},
}

func invalidKeys(n int) string {
	hard := make(map[string]string, n)
	for i := range n {
		hard[fmt.Sprintf("bad_%05d", i)] = "1"
	}
	b, _ := json.Marshal(map[string]any{"hard": hard})
	return string(b)
}

func hostileProfile(name, spec string) string {
	return fmt.Sprintf(`{"apiVersion":"kubeflow.org/v1","kind":"Profile","metadata":{"name":%q},"spec":{"owner":{"kind":"User","name":"eve@example.org"},"plugins":[{"kind":"quotas","spec":%s}]}}`, name, spec)
}

func TestValidateHostileSpecs(t *testing.T) {
	for _, h := range HostileSpecs {
		t.Run(h.Name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "profile.json")
			if err := os.WriteFile(f, []byte(hostileProfile("hostile-"+h.Name, h.Spec)), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, stderr := runMain(t.Context(), "validate", "--config", hostConfig, "-f", f)
			if code != 1 || !strings.Contains(out, "denied") {
				t.Fatalf("exit %d, want 1 and a denial; stdout:\n%s\nstderr:\n%s", code, out, stderr)
			}
			for _, w := range h.Want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout does not contain %q:\n%s", w, out)
				}
			}
			if len(out) > plugins.MaxMessageBytes+200 {
				t.Errorf("%d bytes of output, want it bounded:\n%s", len(out), out)
			}
		})
	}
}
