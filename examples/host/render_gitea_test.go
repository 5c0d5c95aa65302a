package main

import (
	"strings"
	"testing"
)

// TestRenderGiteaOffline renders the per-Profile applications: the objects
// are shown, the password is a stand-in, and the database calls are named
// as skipped, not made.
func TestRenderGiteaOffline(t *testing.T) {
	code, out, stderr := runMain(t.Context(), "render", "--config", "config/argocd-apps.yaml", "-f", "testdata/gitea-profile.yaml")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"kind: Application", "name: team-git.gitea-unclassified", "name: team-git.s3-browser",
		"ROOT_URL: https://kubeflow.example.org/gitea-unclassified/team-git/",
		"name: gitea-unclassified-db", "kind: ServiceEntry", "kind: VirtualService", "kind: NetworkPolicy",
		// The second classification has its own Application, server, prefix and Secret.
		"name: team-git.gitea-protected-b", "HOST: gitea-protected-b.postgres.database.example.net:5432",
		"ROOT_URL: https://kubeflow.example.org/gitea-protected-b/team-git/", "name: gitea-protected-b-db",
		"data.example.org/classification: protected-b",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if !strings.Contains(stderr, "plugin gitea: skipped outside call PostgreSQL database/unclassified") ||
		!strings.Contains(stderr, "plugin gitea: skipped outside call PostgreSQL database/protected-b") {
		t.Errorf("stderr does not name the skipped database call:\n%s", stderr)
	}
}

// TestStatCanGiteaRender renders the StatCan-style Giteas: a banner per
// classification, the Protected B one on the Protected B nodes, and the
// pods selected as the platform selects them.
func TestStatCanGiteaRender(t *testing.T) {
	code, out, stderr := runMain(t.Context(), "render", "--config", "config/statcan-gitea.yaml", "-f", "testdata/statcan-gitea-profile.yaml")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	docs := strings.Split(out, "\n---\n")
	find := func(kind, name string) string {
		t.Helper()
		for _, d := range docs {
			if strings.Contains(d, "\nkind: "+kind+"\n") && strings.Contains(d, "\n  name: "+name+"\n") {
				return d
			}
		}
		t.Fatalf("no %s %s in the rendering", kind, name)
		return ""
	}
	for _, tc := range []struct {
		kind, name string
		want, not  []string
	}{
		{"ConfigMap", "gitea-unclassified-banner", []string{"background:#2e7d32;color:#ffffff", ">UNCLASSIFIED</div>"}, nil},
		{"ConfigMap", "gitea-protected-b-banner", []string{"background:#ffcc00;color:#000000", ">PROTECTED B</div>"}, nil},
		{"Application", "stats-team.gitea-protected-b", []string{
			"node.statcan.gc.ca/purpose: protected-b", "effect: NoSchedule", "name: gitea-protected-b-banner",
			"mountPath: /data/gitea/templates/custom/header.tmpl"}, nil},
		{"Application", "stats-team.gitea-unclassified", []string{"name: gitea-unclassified-banner"}, []string{"nodeSelector", "tolerations"}},
		{"NetworkPolicy", "gitea-protected-b", []string{"app: gitea", "app.kubernetes.io/instance: gitea-protected-b"}, nil},
		{"NetworkPolicy", "gitea-unclassified", []string{"app: gitea", "app.kubernetes.io/instance: gitea-unclassified"}, nil},
	} {
		d := find(tc.kind, tc.name)
		for _, w := range tc.want {
			if !strings.Contains(d, w) {
				t.Errorf("%s %s lacks %q", tc.kind, tc.name, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(d, n) {
				t.Errorf("%s %s holds %q", tc.kind, tc.name, n)
			}
		}
	}
}
