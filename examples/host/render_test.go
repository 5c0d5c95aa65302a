package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/profilekit/profilekit/examples/host/hostapp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ and the rights table of docs/security.md with the current output")

// hostConfig enables every plugin built in, so that the goldens cover them all.
const hostConfig = "config/istio.yaml"

// TestRenderGolden renders every sample Profile with the shipped
// configuration and compares the output with testdata/<name>.golden.yaml.
func TestRenderGolden(t *testing.T) {
	files, err := filepath.Glob("../profiles/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sample Profiles: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			code, out, stderr := runMain(t.Context(), "render", "--config", hostConfig, "-f", f)
			if code != 0 {
				t.Fatalf("render %s: exit %d\n%s", f, code, stderr)
			}
			golden := filepath.Join("testdata", name+".golden.yaml")
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
				t.Errorf("render %s differs from %s (-want +got):\n%s", f, golden, diff)
			}
		})
	}
}

// TestRenderStable renders all sample Profiles at once, twice, in opposite
// orders of the files: the objects of each Profile come out the same.
func TestRenderStable(t *testing.T) {
	files, _ := filepath.Glob("../profiles/*.yaml")
	args := []string{"render", "--config", hostConfig}
	var rev []string
	for i := range files {
		args = append(args, "-f", files[i])
		rev = append(rev, "-f", files[len(files)-1-i])
	}
	_, first, _ := runMain(t.Context(), args...)
	_, second, _ := runMain(t.Context(), append([]string{"render", "--config", hostConfig}, rev...)...)
	if first == "" {
		t.Fatal("no output")
	}
	split := func(s string) map[string]string {
		m := map[string]string{}
		for _, doc := range strings.Split(s, "---\n") {
			head, _, _ := strings.Cut(doc, "\n")
			m[head] += doc
		}
		return m
	}
	if diff := cmp.Diff(split(first), split(second)); diff != "" {
		t.Errorf("per-Profile output depends on file order (-first +second):\n%s", diff)
	}
}

func TestRenderInvalid(t *testing.T) {
	cases := []struct {
		reason  string
		profile string
		want    []string
	}{
		{
			reason:  "an unknown field in a plugin spec names the Profile, the plugin and the field",
			profile: "testdata/invalid-spec.yaml",
			want:    []string{`profile bad-spec: QuotasReady would be False: InvalidSpec: spec.plugins[0] (quotas).spec: unknown field "hardd"`},
		},
		{
			reason:  "a value above the host's cap names the Profile, the plugin and the field",
			profile: "testdata/invalid-cap.yaml",
			want:    []string{"profile over-cap: QuotasReady would be False: InvalidSpec: spec.plugins[0] (quotas).spec: hard[limits.cpu]: limits.cpu 128 is above the cap 64"},
		},
		{
			reason:  "a bad override label names the Profile, the plugin and the label",
			profile: "testdata/invalid-label.yaml",
			want:    []string{`profile bad-label: QuotasReady would be False: InvalidLabel: label quotas.profilekit.dev/limits.cpu="lots": not a quantity`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			code, out, stderr := runMain(t.Context(), "render", "--config", hostConfig, "-f", tc.profile)
			if code == 0 {
				t.Errorf("exit 0, want non-zero")
			}
			if out != "" {
				t.Errorf("stdout holds a partial rendering:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestRenderInvalidExitCode(t *testing.T) {
	code, out, stderr := execMain(t, "render", "--config", hostConfig, "-f", "testdata/invalid-spec.yaml")
	if code != 1 || out != "" || !strings.Contains(stderr, `profilekit: profile bad-spec: QuotasReady would be False: InvalidSpec: spec.plugins[0] (quotas).spec: unknown field "hardd"`) {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, out, stderr)
	}
}

func TestRenderNotes(t *testing.T) {
	code, _, stderr := runMain(t.Context(), "render", "--config", hostConfig, "-f", "testdata/unknown-plugin.yaml")
	if code != 0 || !strings.Contains(stderr, "note: profile lists-unknown: lists plugin sparkles, which this host does not run") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

func TestRenderInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	shard := write("shard.yaml", `
shardSelector: {matchLabels: {shard: a}}
plugins:
  quotas:
    enabled: all
    defaults: {hard: {limits.cpu: "1"}}
`)
	profiles := write("profiles.yaml", `
# two Profiles in one stream, one in the shard
apiVersion: kubeflow.org/v1
kind: Profile
metadata: {name: in-shard, labels: {shard: a}}
---
apiVersion: kubeflow.org/v1
kind: Profile
metadata: {name: elsewhere, labels: {shard: b}}
`)
	t.Run("only the shard's Profiles are rendered", func(t *testing.T) {
		code, out, stderr := runMain(t.Context(), "render", "--config", shard, "-f", profiles)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(out, "namespace: in-shard") || strings.Contains(out, "namespace: elsewhere") {
			t.Errorf("output:\n%s", out)
		}
		if !strings.Contains(stderr, "note: profile elsewhere: outside this host's shard, nothing rendered") {
			t.Errorf("stderr:\n%s", stderr)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		var stdout, stderr strings.Builder
		cmd := hostapp.NewCommand(app(), &stdout, &stderr)
		in, err := os.Open(profiles)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		cmd.SetIn(in)
		cmd.SetArgs([]string{"render", "--config", shard, "-f", "-"})
		if err := cmd.ExecuteContext(t.Context()); err != nil || !strings.Contains(stdout.String(), "namespace: in-shard") {
			t.Errorf("err %v, output:\n%s", err, stdout.String())
		}
	})
	for _, tc := range []struct {
		reason, doc, want string
	}{
		{"not a Profile (Secrets and ConfigMaps are sources)", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", `document 1: want apiVersion kubeflow.org/v1 or kubeflow.org/v1beta1, kind Profile, got "v1", "Pod"`},
		{"a version the API server does not serve", "apiVersion: kubeflow.org/v2\nkind: Profile\nmetadata: {name: x}\n", `got "kubeflow.org/v2", "Profile"`},
		{"an unknown field", "apiVersion: kubeflow.org/v1\nkind: Profile\nmetadata: {name: x}\nspec: {ownr: {}}\n", `unknown field "spec.ownr"`},
		{"no name", "apiVersion: kubeflow.org/v1\nkind: Profile\n", "document 1: Profile has no metadata.name"},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			f := write("bad.yaml", tc.doc)
			code, _, stderr := runMain(t.Context(), "render", "--config", shard, "-f", f)
			if code != 1 || !strings.Contains(stderr, f+": ") || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want 1 and %q naming the file; stderr:\n%s", code, tc.want, stderr)
			}
		})
	}
}
