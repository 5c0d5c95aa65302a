package irsa_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/irsa"
	"github.com/profilekit/profilekit/plugins/irsa/iammock"
	"github.com/profilekit/profilekit/plugins/irsa/trustpolicy"
	"github.com/profilekit/profilekit/reconcilers"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

const (
	condType = "AwsIamForServiceAccountReady"
	provider = "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC123"
	issuer   = "oidc.eks.eu-west-1.amazonaws.com/id/ABC123"
	roleARN  = "arn:aws:iam::111122223333:role/kubeflow/team-role"
	// allowed lets the Profiles of every test use the test roles, shared:
	// Profiles of earlier tests may still hold them.
	allowed = `"allowedIdentities":[{"identity":"` + roleARN + `","shared":true},` +
		`{"identity":"arn:aws:iam::111122223333:role/kubeflow/other-role","shared":true}]`
	role = "team-role"
)

// startPolicy has a statement for EC2 and one for the provider with a
// session-tag condition, both someone else's.
const startPolicy = `{"Version":"2012-10-17","Statement":[
 {"Sid":"Ec2","Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"},
 {"Sid":"Tagged","Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":["sts:AssumeRoleWithWebIdentity","sts:TagSession"],
  "Condition":{"StringEquals":{"` + issuer + `:sub":"system:serviceaccount:ops:runner"},"StringLike":{"aws:RequestTag/team":"ops-*"}}}]}`

// roles is IAM's side of the test: the trust policies, which the mocked
// calls read and write.
type roles struct {
	mu   sync.Mutex
	docs map[string]string
}

func (r *roles) get(_ context.Context, name string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.docs[name], nil
}

func (r *roles) set(_ context.Context, name, doc string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.docs[name] = doc
	return nil
}

func (r *roles) doc(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.docs[name]
}

func entry(spec string) kubeflowv1.Plugin {
	return kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: irsa.Kind}, Spec: &runtime.RawExtension{Raw: []byte(spec)}}
}

func canonical(t *testing.T, doc string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("policy is not JSON: %v\n%s", err, doc)
	}
	out, _ := json.MarshalIndent(v, "", " ")
	return string(out)
}

func annotationsAre(want map[string]string) func(*corev1.ServiceAccount) (bool, string) {
	return func(sa *corev1.ServiceAccount) (bool, string) {
		d := cmp.Diff(want, sa.Annotations)
		return d == "", "annotations (-want +got):\n" + d
	}
}

func TestTrustLifecycle(t *testing.T) {
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	iam := iammock.NewMockIAM(ctrl)
	otherRoleAbsent(iam)
	store := &roles{docs: map[string]string{role: startPolicy}}
	iam.EXPECT().TrustPolicy(gomock.Any(), role).DoAndReturn(store.get).Times(1)
	iam.EXPECT().SetTrustPolicy(gomock.Any(), role, gomock.Any()).DoAndReturn(store.set).Times(1)

	h := testhost.Start(t, env, testhost.Plugin{Def: irsa.Definition(iam), Options: []reconcilers.Option{allow(""), reconcilers.WithResync(300 * time.Millisecond)}})
	name := "irsa-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, entry(`{"awsIamRole":"`+roleARN+`"}`))

	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "ServiceAccount "+name+"/default-editor does not exist yet")
	handWritten := map[string]string{"team.example.org/contact": "alice"}
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", handWritten)
	sa := testhost.WaitServiceAccount(t, env.Client, name, "default-editor",
		annotationsAre(map[string]string{"team.example.org/contact": "alice", irsa.AnnotationRoleARN: roleARN}))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

	subject := "system:serviceaccount:" + name + ":default-editor"
	t.Run("the trust policy gains our statement, with our Sid, and keeps the rest", func(t *testing.T) {
		want := strings.TrimSuffix(startPolicy, `]}`) + `,
 {"Sid":"` + trustpolicy.StatementID(provider, name) + `","Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity",
  "Condition":{"StringEquals":{"` + issuer + `:aud":"sts.amazonaws.com","` + issuer + `:sub":"` + subject + `"}}}]}`
		if diff := cmp.Diff(canonical(t, want), canonical(t, store.doc(role))); diff != "" {
			t.Errorf("trust policy (-want +got):\n%s", diff)
		}
	})

	t.Run("our field manager owns the one annotation key, nothing else", func(t *testing.T) {
		got := testhost.FieldsOf(sa, plugins.FieldManagerFor(irsa.Kind))
		want := []string{`Apply {"f:metadata":{"f:annotations":{"f:` + irsa.AnnotationRoleARN + `":{}}}}`}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("fields (-want +got):\n%s", diff)
		}
		if len(sa.Labels) != 0 || len(sa.OwnerReferences) != 0 {
			t.Errorf("service account labels %v, owner references %v: the plugin must not take it over", sa.Labels, sa.OwnerReferences)
		}
	})

	t.Run("a resync makes no IAM call and sends no mutating request", func(t *testing.T) {
		if got := h.ResyncWrites(t, 3, irsa.Kind); len(got) != 0 {
			t.Errorf("mutating requests on resync = %v, want none", got)
		}
	})

	t.Run("revoke removes our statement and our annotation only", func(t *testing.T) {
		// Read once for the record's key, and again by any further pass of
		// the revoke: failing closed, it reads every role the host's
		// allowances name for the Profile. Written once.
		iam.EXPECT().TrustPolicy(gomock.Any(), role).DoAndReturn(store.get).MinTimes(1)
		iam.EXPECT().SetTrustPolicy(gomock.Any(), role, gomock.Any()).DoAndReturn(store.set).Times(1)
		testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
		testhost.WaitServiceAccount(t, env.Client, name, "default-editor", annotationsAre(handWritten))
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			var p kubeflowv1.Profile
			if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
				return false, err.Error()
			}
			return len(p.Finalizers) == 0 && plugins.FindCondition(p.Status.Conditions, condType) == nil,
				"finalizers " + strings.Join(p.Finalizers, ",")
		})
		// Our statement went; the others stay.
		if diff := cmp.Diff(canonical(t, startPolicy), canonical(t, store.doc(role))); diff != "" {
			t.Errorf("trust policy after revoke (-want +got):\n%s", diff)
		}
		// And the revoke says so: the statement deleted, the annotation
		// taken off.
		testhost.WaitRevoked(t, env.Client, name, irsa.Kind, "1 configured, 1 deleted")
	})
	ctrl.Finish()
}

func TestPolicyPastTheSizeLimitIsReported(t *testing.T) {
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	iam := iammock.NewMockIAM(ctrl)
	otherRoleAbsent(iam)
	store := &roles{docs: map[string]string{role: startPolicy}}
	iam.EXPECT().TrustPolicy(gomock.Any(), role).DoAndReturn(store.get).MinTimes(1)

	testhost.Start(t, env, testhost.Plugin{Def: irsa.Definition(iam), Options: []reconcilers.Option{allow(`,"maxPolicySize":400`)}})
	name := "irsa-big-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, entry(`{"awsIamRole":"`+roleARN+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)

	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, irsa.ReasonTrustPolicyTooLarge)
	if !strings.Contains(cond.Message, "over the limit of 400") {
		t.Errorf("condition %q does not say by how much", cond.Message)
	}
	if got := store.doc(role); got != startPolicy {
		t.Errorf("trust policy was written: %s", got)
	}
	// The role was recorded before the attempt: letting the Profile go
	// reads the policy once more and writes nothing.
	stopListing(t, name)
	if got := store.doc(role); got != startPolicy {
		t.Errorf("trust policy was written when the Profile let it go: %s", got)
	}
	ctrl.Finish()
}

func TestAnnotateOnlyCallsNoIAM(t *testing.T) {
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	iam := iammock.NewMockIAM(ctrl) // no expectations: any call fails the test

	testhost.Start(t, env, testhost.Plugin{Def: irsa.Definition(iam), Options: []reconcilers.Option{allow("")}})
	name := "irsa-annot-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, entry(`{"awsIamRole":"`+roleARN+`","annotateOnly":true}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitServiceAccount(t, env.Client, name, "default-editor", annotationsAre(map[string]string{irsa.AnnotationRoleARN: roleARN}))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	ctrl.Finish()
}

func TestBadRoleIsReportedAndOthersAreServed(t *testing.T) {
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	iam := iammock.NewMockIAM(ctrl)
	otherRoleAbsent(iam)
	testhost.Start(t, env, testhost.Plugin{Def: irsa.Definition(iam), Options: []reconcilers.Option{allow("")}})
	bad, good := "irsa-bad-"+rand.String(5), "irsa-good-"+rand.String(5)
	testhost.NewProfile(t, env.Client, bad, nil, entry(`{"awsIamRole":"team-role"}`))
	testhost.NewProfile(t, env.Client, good, nil, entry(`{"awsIamRole":"`+roleARN+`","annotateOnly":true}`))
	testhost.CreateServiceAccount(t, env.Client, good, "default-editor", nil)
	testhost.CreateServiceAccount(t, env.Client, bad, "default-editor", map[string]string{"keep": "me"})

	testhost.WaitCondition(t, env.Client, bad, condType, plugins.ConditionFalse, `InvalidSpec: spec.plugins[0] (AwsIamForServiceAccount).spec: awsIamRole "team-role": not an IAM role ARN`)
	testhost.WaitCondition(t, env.Client, good, condType, plugins.ConditionTrue, "")
	sa := testhost.WaitServiceAccount(t, env.Client, bad, "default-editor", func(*corev1.ServiceAccount) (bool, string) { return true, "" })
	if keys := slices.Sorted(maps.Keys(sa.Annotations)); !slices.Equal(keys, []string{"keep"}) {
		t.Errorf("service account of the bad Profile has annotations %v, want only keep", keys)
	}
	ctrl.Finish()
}

// allow returns the host defaults that allow the test roles, with extra
// (",\"key\":value...") after them.
func allow(extra string) reconcilers.Option {
	return reconcilers.WithDefaults([]byte("{" + allowed + extra + "}"))
}

// otherRoleAbsent answers a read of the test allowance's second role
// (other-role), which a revoke reads failing closed, as IAM answers for a
// role that does not exist. A read of any role the host's allowances do not
// name still fails the test.
func otherRoleAbsent(iam *iammock.MockIAM) {
	iam.EXPECT().TrustPolicy(gomock.Any(), "other-role").Return("", irsa.ErrNoRole).AnyTimes()
}

// rolesAbsent answers a read of any role but known as IAM answers for a
// role that does not exist: for hosts whose allowances are templates, which
// name a role per Profile.
func rolesAbsent(iam *iammock.MockIAM, known ...string) {
	iam.EXPECT().TrustPolicy(gomock.Any(), gomock.Cond(func(r string) bool { return !slices.Contains(known, r) })).
		Return("", irsa.ErrNoRole).AnyTimes()
}
