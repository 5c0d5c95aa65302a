package contributors_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/contributors"
)

// skippedSync is an Objects whose Sync met KFAM's binding and policy of
// one contributor, as the Applier reports them: Skipped, and a Conflict.
type skippedSync struct {
	plugins.Objects
	ns, name string
}

func (s skippedSync) Sync(context.Context, ...runtime.ApplyConfiguration) (plugins.Result, error) {
	var res plugins.Result
	var errs []error
	for _, kind := range []string{"RoleBinding", "AuthorizationPolicy"} {
		res.Add(plugins.Change{Kind: kind, Namespace: s.ns, Name: s.name, Action: plugins.Skipped})
		errs = append(errs, plugins.Terminalf(plugins.ReasonConflict, "%s %s/%s exists and is not managed by plugin contributors", kind, s.ns, s.name))
	}
	return res, errors.Join(errs...)
}

// What the condition says of KFAM's objects is what the API server holds
// after the apply met them: a policy KFAM deleted a moment later is not
// named, and the pass is retried rather than terminal.
func TestConflictNamesOnlyWhatIsThere(t *testing.T) {
	const ns = "team-a"
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	cfg := contributors.NewConfig()
	cfg.Contributors = []contributors.Contributor{{Kind: "User", Name: "alice@example.org", Role: "edit"}}
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{rbacv1.AddToScheme, securityv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	kfamBinding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: aliceEdit}}
	for _, tc := range []struct {
		reason       string
		live         []client.Object
		wantTerminal bool
		want, not    []string
	}{
		{
			reason:       "both still there: a Conflict naming both",
			live:         []client.Object{kfamBinding, &securityv1.AuthorizationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: aliceEdit}}},
			wantTerminal: true,
			want:         []string{"RoleBinding and AuthorizationPolicy " + aliceEdit + " were made outside profilekit"},
			not:          []string{"exists and is not managed"},
		},
		{
			reason: "the policy went after the apply met it: retried, and only the binding is named",
			live:   []client.Object{kfamBinding},
			want:   []string{"RoleBinding " + aliceEdit + " was made outside profilekit", "AuthorizationPolicy " + ns + "/" + aliceEdit + " that another writer held is gone"},
			not:    []string{"AuthorizationPolicy " + aliceEdit + " was made", "RoleBinding and AuthorizationPolicy"},
		},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			live := fake.NewClientBuilder().WithScheme(s).WithObjects(tc.live...).Build()
			_, err := contributors.Plugin{}.Apply(t.Context(), plugins.Request{Profile: p, Config: cfg, Client: live, Live: live, Objects: skippedSync{ns: ns, name: aliceEdit}})
			if err == nil {
				t.Fatal("no error")
			}
			if got := plugins.IsTerminal(err); got != tc.wantTerminal {
				t.Errorf("terminal %v, want %v: %v", got, tc.wantTerminal, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(err.Error(), n) {
					t.Errorf("error %q says %q", err, n)
				}
			}
		})
	}
}
