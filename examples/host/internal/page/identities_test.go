package page_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/irsa"
	"github.com/profilekit/profilekit/plugins/workloadidentity"
)

// serviceAccount makes ServiceAccount name in ns, labelled as core makes
// it, with annotations written by field manager owner.
func serviceAccount(t *testing.T, ns, name, owner string, annotations map[string]string) {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels("core", ns), Annotations: annotations}}
	must(t, env.Client.Create(t.Context(), sa, client.FieldOwner(owner)))
}

// TestIdentityState: a cloud identity is in effect only when the plugin
// that grants it wrote it and reports Ready; under a plugin that is not
// ready the page says why, and an identity someone in the namespace
// wrote on a ServiceAccount by hand is said to be no grant at all.
func TestIdentityState(t *testing.T) {
	viewClusterRole(t)
	h := host(t)
	ready := tenant(t, "ids", "alice@example.org",
		kubeflowv1.ProfileCondition{Type: "AwsIamForServiceAccountReady", Status: "True", Message: "Applied: 1 object in sync"})
	refused := tenant(t, "refused", "alice@example.org",
		kubeflowv1.ProfileCondition{Type: "AwsIamForServiceAccountReady", Status: "False", Message: `IdentityNotAllowed: identity "arn:aws:iam::1:role/shared" is not allowed`})
	for _, ns := range []string{ready, refused} {
		bind(t, ns, "core", "User", "alice@example.org", "admin")
	}
	irsaManager := plugins.FieldManagerFor(irsa.Kind)
	serviceAccount(t, ready, "default-editor", irsaManager, map[string]string{irsa.AnnotationRoleARN: "arn:aws:iam::1:role/ids"})
	serviceAccount(t, ready, "forged", "kubectl-edit", map[string]string{irsa.AnnotationRoleARN: "arn:aws:iam::1:role/admin"})
	serviceAccount(t, ready, "gcp", plugins.FieldManagerFor(workloadidentity.Kind),
		map[string]string{workloadidentity.AnnotationGSA: "ids@project.iam.gserviceaccount.com"})
	serviceAccount(t, refused, "default-editor", irsaManager, map[string]string{irsa.AnnotationRoleARN: "arn:aws:iam::1:role/shared"})

	sec := section(eventually(t, h, "/?ns="+ready, "alice@example.org", "", "forged", "gcp"), "identities")
	for _, want := range []string{
		`<tr><td>default-editor</td><td>AWS IAM role</td><td><code>arn:aws:iam::1:role/ids</code></td><td class="state">in effect</td></tr>`,
		`<tr class="bad"><td>forged</td><td>AWS IAM role</td><td><code>arn:aws:iam::1:role/admin</code></td><td class="state">not in effect yet: set on this service account by hand, not granted by the platform</td></tr>`,
		`<tr class="bad"><td>gcp</td><td>Google service account</td><td><code>ids@project.iam.gserviceaccount.com</code></td><td class="state">not in effect yet: the platform has not reported on it yet</td></tr>`,
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("the identities of %s lack %s:\n%s", ready, want, sec)
		}
	}
	sec = section(eventually(t, h, "/?ns="+refused, "alice@example.org", "", "default-editor"), "identities")
	if want := `<td class="state">not in effect yet: IdentityNotAllowed identity &#34;arn:aws:iam::1:role/shared&#34; is not allowed</td>`; !strings.Contains(sec, want) {
		t.Errorf("the identity under a plugin that is not ready lacks %s:\n%s", want, sec)
	}
}
