package main

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// TestTenureListAndRelease: an administrator lists the held names, sees
// that the Profile of one is of another owner, and hands the name over;
// the Profile is asked for a pass at once, and a second release finds
// nothing to do.
func TestTenureListAndRelease(t *testing.T) {
	ctx := t.Context()
	const cfg, records = "testdata/diff/quota.yaml", "default" // the configuration's leaderElection.namespace
	kubeconfig := writeKubeconfig(t)
	name := "tenure-cli-" + rand.String(5)
	user := func(n string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: n}
	}
	tenures := outside.Tenures{Reader: env.Client, Writer: env.Client, Namespace: records}
	if err := tenures.Hold(ctx, &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-of-the-deleted-profile"},
		Spec: kubeflowv1.ProfileSpec{Owner: user("alice@example.org")}}); err != nil {
		t.Fatal(err)
	}
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kubeflowv1.ProfileSpec{Owner: user("mallory@example.org")}}
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), p) }) //nolint:forbidigo // cleanups run after t.Context is canceled

	code, out, stderr := runMain(ctx, "tenure", "list", "--config", cfg, "--kubeconfig", kubeconfig)
	line := ""
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, name+" ") {
			line = strings.TrimSpace(l)
		}
	}
	if code != 0 || !strings.HasSuffix(line, "of another owner: its plugins with outside state report Conflict") {
		t.Fatalf("tenure list: exit %d, line %q\n%s%s", code, line, out, stderr)
	}
	t.Logf("tenure list: %s", line)

	code, out, stderr = runMain(ctx, "tenure", "release", name, "--config", cfg, "--kubeconfig", kubeconfig)
	if code != 0 || !strings.Contains(out, "released the name "+name) {
		t.Fatalf("tenure release: exit %d\n%s%s", code, out, stderr)
	}
	if err := tenures.Check(ctx, p); err != nil {
		t.Errorf("after the release, the Profile of the name is still refused: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil || p.Annotations[plugins.AnnotationReverify] == "" {
		t.Errorf("the Profile of the name was not asked for a pass (%v): annotations %v", err, p.Annotations)
	}
	code, out, _ = runMain(ctx, "tenure", "release", name, "--config", cfg, "--kubeconfig", kubeconfig)
	if code != 0 || !strings.Contains(out, "nothing to release") {
		t.Errorf("a second release: exit %d\n%s", code, out)
	}
}
