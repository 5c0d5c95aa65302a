package irsa_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/irsa"
	"github.com/profilekit/profilekit/plugins/irsa/iammock"
	"github.com/profilekit/profilekit/plugins/irsa/trustpolicy"
	"github.com/profilekit/profilekit/reconcilers"
)

// outage stands between the plugin and the roles: while down, every call
// fails as an unreachable IAM would.
type outage struct {
	down     atomic.Bool
	readOnly atomic.Bool // refuses writes only, as an IAM denying UpdateAssumeRolePolicy does
	writes   atomic.Int32
	roles    *roles
}

var errUnavailable = errors.New("api error ServiceUnavailable: Service Unavailable")

func (o *outage) get(ctx context.Context, name string) (string, error) {
	if o.down.Load() {
		return "", errUnavailable
	}
	return o.roles.get(ctx, name)
}

func (o *outage) set(ctx context.Context, name, doc string) error {
	if o.down.Load() || o.readOnly.Load() {
		return errUnavailable
	}
	o.writes.Add(1)
	return o.roles.set(ctx, name, doc)
}

// hostile starts a host whose IAM holds doc as the role's trust policy.
func hostile(t *testing.T, doc string, defaults string) *outage {
	t.Helper()
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	iam := iammock.NewMockIAM(ctrl)
	o := &outage{roles: &roles{docs: map[string]string{role: doc}}}
	iam.EXPECT().TrustPolicy(gomock.Any(), role).DoAndReturn(o.get).AnyTimes()
	iam.EXPECT().SetTrustPolicy(gomock.Any(), role, gomock.Any()).DoAndReturn(o.set).AnyTimes()
	otherRoleAbsent(iam)
	opts := []reconcilers.Option{allow(`,"oidcProvider":"` + provider + `"` + defaults)}
	testhost.Start(t, env, testhost.Plugin{Def: irsa.Definition(iam), Options: opts})
	return o
}

// trusted makes a Profile that names the role, with its service account,
// and waits until the plugin is done with it.
func trusted(t *testing.T, name string) {
	t.Helper()
	testhost.NewProfile(t, env.Client, name, nil, entry(`{"awsIamRole":"`+roleARN+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
}

// stopListing removes the plugin from the Profile and waits until Revoke
// let it go.
func stopListing(t *testing.T, name string) {
	t.Helper()
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		var p kubeflowv1.Profile
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			return false, err.Error()
		}
		return len(p.Finalizers) == 0, "finalizers " + strings.Join(p.Finalizers, ",")
	})
}

// legacy is a statement of the form versions before Sids wrote (and eksctl
// writes), trusting only the service account of namespace.
func legacy(namespace string) string {
	return `{"Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity","Condition":{"StringEquals":{"` +
		issuer + `:aud":"sts.amazonaws.com","` + issuer + `:sub":"system:serviceaccount:` + namespace + `:default-editor"}}}`
}

func TestForeignStatementWithOurSubjectIsLeftAlone(t *testing.T) {
	name := "irsa-foreign-" + rand.String(5)
	doc := `{"Version":"2012-10-17","Statement":[` + legacy(name) + `]}`
	o := hostile(t, doc, "")
	trusted(t, name)
	stopListing(t, name)
	if got := o.roles.doc(role); got != doc {
		t.Errorf("trust policy = %s\nwant it untouched: %s", got, doc)
	}
	if n := o.writes.Load(); n != 0 {
		t.Errorf("the trust policy was written %d times, want never", n)
	}
}

func TestAdoptStatementsClaimsOnlyOurForm(t *testing.T) {
	name := "irsa-adopt-" + rand.String(5)
	// The second statement trusts our subject too, but also another's.
	shared := strings.Replace(legacy(name), `:default-editor"`, `:default-editor","system:serviceaccount:ops:runner"]`, 1)
	shared = strings.Replace(shared, `:sub":"system`, `:sub":["system`, 1)
	doc := `{"Version":"2012-10-17","Statement":[` + legacy(name) + `,` + shared + `]}`
	o := hostile(t, doc, `,"adoptStatements":true`)
	trusted(t, name)
	claimed := `{"Sid":"` + trustpolicy.StatementID(provider, name) + `",` + strings.TrimPrefix(legacy(name), "{")
	if want := `{"Version":"2012-10-17","Statement":[` + claimed + `,` + shared + `]}`; o.roles.doc(role) != want {
		t.Errorf("trust policy after apply = %s\nwant %s", o.roles.doc(role), want)
	}
	stopListing(t, name)
	if want := `{"Version":"2012-10-17","Statement":[` + shared + `]}`; o.roles.doc(role) != want {
		t.Errorf("trust policy after revoke = %s\nwant %s", o.roles.doc(role), want)
	}
}

// Two Profiles whose names differ only by a dash get statements of their
// own; revoking one leaves the other's.
func TestCraftedNamesKeepTheirStatements(t *testing.T) {
	o := hostile(t, startPolicy, "")
	q := "irsa-col-" + rand.String(5)
	a, b := q+"-z", q+"z"
	trusted(t, a)
	trusted(t, b)
	for _, ns := range []string{a, b} {
		if id := trustpolicy.StatementID(provider, ns); strings.Count(o.roles.doc(role), `"Sid":"`+id+`"`) != 1 {
			t.Fatalf("trust policy lacks %s's statement %s:\n%s", ns, id, o.roles.doc(role))
		}
	}
	stopListing(t, a)
	doc := o.roles.doc(role)
	if strings.Contains(doc, trustpolicy.StatementID(provider, a)) || !strings.Contains(doc, "system:serviceaccount:"+b+":default-editor") {
		t.Errorf("after revoking %s the trust policy is\n%s", a, doc)
	}
	stopListing(t, b)
	if diff := cmp.Diff(canonical(t, startPolicy), canonical(t, o.roles.doc(role))); diff != "" {
		t.Errorf("trust policy after both revokes (-want +got):\n%s", diff)
	}
}

// An IAM that does not answer, or that reads the trust policy but refuses
// to write it, holds the Profile's deletion: the statement is still there.
func TestOutageDuringDeletionHoldsTheProfile(t *testing.T) {
	for _, c := range []struct {
		fault string
		of    func(*outage) *atomic.Bool
	}{
		{"down", func(o *outage) *atomic.Bool { return &o.down }},
		{"read only", func(o *outage) *atomic.Bool { return &o.readOnly }},
	} {
		t.Run(c.fault, func(t *testing.T) {
			o := hostile(t, startPolicy, "")
			name := "irsa-outage-" + rand.String(5)
			trusted(t, name)
			withUs := o.roles.doc(role)
			fail := c.of(o)
			fail.Store(true)
			testhost.DeleteHeld(t, env.Client, name, irsa.Kind)
			if got := o.roles.doc(role); got != withUs {
				t.Errorf("trust policy changed during the outage: %s", got)
			}
			fail.Store(false)
			testhost.WaitProfileGone(t, env.Client, name, 30*time.Second)
			if diff := cmp.Diff(canonical(t, startPolicy), canonical(t, o.roles.doc(role))); diff != "" {
				t.Errorf("trust policy after the outage (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOutageFromTheStartHoldsTheDeletionOfARoleRecordedAhead: IAM is down
// from the Profile's first pass, so the role is recorded and never trusted.
// The Profile deleted during the outage waits (the role may have been
// written by a call whose answer was lost), and once IAM answers its
// deletion reads the policy and writes nothing: there is no statement of
// ours to remove.
func TestOutageFromTheStartHoldsTheDeletionOfARoleRecordedAhead(t *testing.T) {
	o := hostile(t, startPolicy, "")
	o.down.Store(true)
	name := "irsa-ahead-down-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, entry(`{"awsIamRole":"`+roleARN+`"}`))
	testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "ServiceUnavailable")
	testhost.DeleteHeld(t, env.Client, name, irsa.Kind)
	o.down.Store(false)
	testhost.WaitProfileGone(t, env.Client, name, 30*time.Second)
	if n := o.writes.Load(); n != 0 || o.roles.doc(role) != startPolicy {
		t.Errorf("the trust policy was written %d times: %s", n, o.roles.doc(role))
	}
}

// TestRoleAnnotatedOnlyOnceTrusted: a pod given a role that does not trust
// it fails in confusing ways, so the annotation waits for the trust policy.
func TestRoleAnnotatedOnlyOnceTrusted(t *testing.T) {
	tests := []struct {
		reason   string
		defaults string
		policy   func(context.Context, string) (string, error)
		// refuseWrite refuses each write of the trust policy, as an IAM
		// that denies UpdateAssumeRolePolicy does.
		refuseWrite bool
		want        string
	}{
		{
			reason:   "the trust policy would pass the size limit",
			defaults: `,"maxPolicySize":400`,
			policy:   func(context.Context, string) (string, error) { return startPolicy, nil },
			want:     irsa.ReasonTrustPolicyTooLarge,
		},
		{
			reason: "IAM does not answer",
			policy: func(context.Context, string) (string, error) { return "", errors.New("service unavailable") },
			want:   "service unavailable",
		},
		{
			reason:      "IAM refuses to write the trust policy",
			policy:      func(context.Context, string) (string, error) { return startPolicy, nil },
			refuseWrite: true,
			want:        "AccessDenied",
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			ctrl := gomock.NewController(&testhost.MockReporter{T: t})
			iam := iammock.NewMockIAM(ctrl)
			otherRoleAbsent(iam)
			// Once healed, IAM answers from store: a pass of the Profile
			// still in line when it heals may then trust the role before
			// the Profile lets it go.
			var healed atomic.Bool
			store := &roles{docs: map[string]string{role: startPolicy}}
			iam.EXPECT().TrustPolicy(gomock.Any(), role).DoAndReturn(func(ctx context.Context, name string) (string, error) {
				if healed.Load() {
					return store.get(ctx, name)
				}
				return tt.policy(ctx, name)
			}).MinTimes(1)
			iam.EXPECT().SetTrustPolicy(gomock.Any(), role, gomock.Any()).DoAndReturn(func(ctx context.Context, name, doc string) error {
				switch {
				case !healed.Load() && tt.refuseWrite:
					return errors.New("api error AccessDenied: not authorized to perform iam:UpdateAssumeRolePolicy")
				case !healed.Load():
					t.Errorf("the trust policy was written before IAM healed: %s", doc)
				}
				return store.set(ctx, name, doc)
			}).AnyTimes()
			opts := []reconcilers.Option{allow(tt.defaults)}
			testhost.Start(t, env, testhost.Plugin{Def: irsa.Definition(iam), Options: opts})
			name := "irsa-order-" + rand.String(5)
			testhost.NewProfile(t, env.Client, name, nil, entry(`{"awsIamRole":"`+roleARN+`"}`))
			testhost.CreateServiceAccount(t, env.Client, name, "default-editor", map[string]string{"keep": "me"})
			testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, tt.want)
			sa := testhost.WaitServiceAccount(t, env.Client, name, "default-editor", func(*corev1.ServiceAccount) (bool, string) { return true, "" })
			if got, ok := sa.Annotations[irsa.AnnotationRoleARN]; ok {
				t.Errorf("service account annotated with %s while the role does not trust it", got)
			}
			// The role was recorded before the attempt, so letting the
			// Profile go reads its policy: IAM answers again by then.
			healed.Store(true)
			stopListing(t, name)
			if got := store.doc(role); canonical(t, got) != canonical(t, startPolicy) {
				t.Errorf("trust policy after the Profile let the role go: %s", got)
			}
			ctrl.Finish()
		})
	}
}

// meeting holds each read of a trust policy until n reads are waiting or a
// moment passed, so that passes that can read at once do.
type meeting struct {
	n       int
	arrived chan struct{}
	roles   *roles
}

func (m *meeting) get(ctx context.Context, name string) (string, error) {
	m.arrived <- struct{}{}
	deadline := time.After(300 * time.Millisecond)
	for len(m.arrived) < m.n {
		select {
		case <-deadline:
			return m.roles.get(ctx, name)
		case <-time.After(5 * time.Millisecond):
		}
	}
	return m.roles.get(ctx, name)
}

// Profiles whose passes run at once all name one role. IAM replaces the
// whole trust policy and takes no precondition: passes that read it at
// once and each write it back with their own statement lose all but the
// last one's, while every record says done. Each Profile's statement must
// be in the policy.
func TestProfilesSharingARoleKeepEveryStatement(t *testing.T) {
	const n = 4
	ctrl := gomock.NewController(&testhost.MockReporter{T: t})
	iam := iammock.NewMockIAM(ctrl)
	otherRoleAbsent(iam)
	store := &roles{docs: map[string]string{role: startPolicy}}
	m := &meeting{n: n, arrived: make(chan struct{}, 100), roles: store}
	iam.EXPECT().TrustPolicy(gomock.Any(), role).DoAndReturn(m.get).AnyTimes()
	iam.EXPECT().SetTrustPolicy(gomock.Any(), role, gomock.Any()).DoAndReturn(store.set).AnyTimes()
	// An account with the raised quota, so that every statement fits.
	opts := []reconcilers.Option{allow(`,"oidcProvider":"` + provider + `","maxPolicySize":8192`)}
	testhost.Start(t, env, testhost.Plugin{Def: irsa.Definition(iam), Options: opts})

	q := "irsa-share-" + rand.String(5)
	var names []string
	for i := range n {
		name := q + "-" + string(rune('a'+i))
		names = append(names, name)
		testhost.NewProfile(t, env.Client, name, nil, entry(`{"awsIamRole":"`+roleARN+`"}`))
	}
	for _, name := range names {
		testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
	}
	for _, name := range names {
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	}
	doc := store.doc(role)
	for _, name := range names {
		if id := trustpolicy.StatementID(provider, name); strings.Count(doc, `"Sid":"`+id+`"`) != 1 {
			t.Errorf("trust policy lacks %s's statement %s", name, id)
		}
	}
	if t.Failed() {
		t.Logf("trust policy:\n%s", doc)
	}
	// Revokes at once take out every statement they added, and only those.
	for _, name := range names {
		testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
	}
	for _, name := range names {
		stopListing(t, name)
	}
	if diff := cmp.Diff(canonical(t, startPolicy), canonical(t, store.doc(role))); diff != "" {
		t.Errorf("trust policy after every revoke (-want +got):\n%s", diff)
	}
}

// IAM answering an empty or malformed trust policy, at a Profile's first
// pass and later during its deletion: nothing is ever written over it, the
// condition or the finalizer says so, and once the document reads again the
// deletion removes our statement and only ours.
func TestEmptyOrMalformedTrustPolicyIsNeverWritten(t *testing.T) {
	for _, doc := range []string{``, `{`, `{"Version":"2012-10-17","Statement":"all"}`} {
		t.Run("at the first pass: "+doc, func(t *testing.T) {
			o := hostile(t, doc, "")
			name := "irsa-bad-" + rand.String(5)
			testhost.NewProfile(t, env.Client, name, nil, entry(`{"awsIamRole":"`+roleARN+`"}`))
			testhost.CreateServiceAccount(t, env.Client, name, "default-editor", nil)
			testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "role "+role)
			if n := o.writes.Load(); n != 0 || o.roles.doc(role) != doc {
				t.Errorf("%d writes, trust policy now %q; want none over %q", n, o.roles.doc(role), doc)
			}
		})
	}
	t.Run("during the deletion", func(t *testing.T) {
		o := hostile(t, startPolicy, "")
		name := "irsa-bad-" + rand.String(5)
		trusted(t, name)
		withUs, writes := o.roles.doc(role), o.writes.Load()
		if err := o.roles.set(t.Context(), role, `{`); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Delete(t.Context(), &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		var p kubeflowv1.Profile
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil || !slices.Contains(p.Finalizers, plugins.FinalizerPrefix+irsa.Kind) {
			t.Fatalf("with a malformed trust policy the Profile went or lost our finalizer: %v, %v", err, p.Finalizers)
		}
		if o.writes.Load() != writes || o.roles.doc(role) != `{` {
			t.Errorf("the malformed trust policy was written over: %q", o.roles.doc(role))
		}
		if err := o.roles.set(t.Context(), role, withUs); err != nil {
			t.Fatal(err)
		}
		testhost.WaitProfileGone(t, env.Client, name, 30*time.Second)
		if diff := cmp.Diff(canonical(t, startPolicy), canonical(t, o.roles.doc(role))); diff != "" {
			t.Errorf("trust policy after the deletion (-want +got):\n%s", diff)
		}
	})
}
