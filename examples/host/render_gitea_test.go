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
