package contributors_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/testing/protocmp"
	securityv1beta1 "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/contributors"
	"github.com/profilekit/profilekit/reconcilers"
)

// noHash leaves the Applier's hash of what it applied out of a comparison
// of annotations.
var noHash = cmpopts.IgnoreMapEntries(func(k, _ string) bool { return k == plugins.AnnotationAppliedHash })

var (
	aliceEdit   = contributors.BindingName("User", "alice@example.org", "edit")
	aliceView   = contributors.BindingName("User", "alice@example.org", "view")
	bobView     = contributors.BindingName("User", "bob@example.org", "view")
	readersView = contributors.BindingName("Group", "readers", "view")
)

func TestContributorsLifecycle(t *testing.T) {
	start(t)
	name := uniqueName("team")
	p := testhost.NewProfile(t, env.Client, name, nil)
	// A contributor added in the dashboard, under a name no entry wants.
	zedRB, zedAP := handMade(t, name, "zed@example.org", "view")

	declare(t, name, entry("User", "alice@example.org", "edit"), entry("User", "bob@example.org", "view"), entry("Group", "readers", "view"))
	waitOwned(t, name, []string{aliceEdit, bobView, readersView}, []string{aliceEdit, bobView, readersView})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "6 objects in sync")
	waitKFAMList(t, name, "Group readers view", "User alice@example.org edit", "User bob@example.org view", "User zed@example.org view")

	t.Run("the server holds KFAM's shape, labelled and owned by the Profile", func(t *testing.T) {
		bs, ps := owned(t, name)
		rb := bs[aliceEdit]
		if diff := cmp.Diff(map[string]string{"user": "alice@example.org", "role": "edit"}, rb.Annotations, noHash); diff != "" {
			t.Errorf("annotations (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubeflow-edit"}, rb.RoleRef); diff != "" {
			t.Errorf("roleRef (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice@example.org"}}, rb.Subjects); diff != "" {
			t.Errorf("subjects (-want +got):\n%s", diff)
		}
		for _, o := range []client.Object{&rb, ps[aliceEdit]} {
			if diff := cmp.Diff(plugins.OwnershipLabels(contributors.Kind, name), o.GetLabels()); diff != "" {
				t.Errorf("%T labels (-want +got):\n%s", o, diff)
			}
			if refs := o.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != p.UID {
				t.Errorf("%T owner references %+v, want one to the Profile", o, refs)
			}
		}
		wantUser := &securityv1beta1.AuthorizationPolicy{Rules: []*securityv1beta1.Rule{{
			From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: []string{gatewayPrincipal, pipelinesUI}}}},
			When: []*securityv1beta1.Condition{{Key: "request.headers[kubeflow-userid]", Values: []string{"alice@example.org"}}},
		}}}
		if diff := cmp.Diff(wantUser, &ps[aliceEdit].Spec, protocmp.Transform()); diff != "" {
			t.Errorf("alice's policy (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]string{"user": "alice@example.org", "role": "edit"}, ps[aliceEdit].Annotations, noHash); diff != "" {
			t.Errorf("alice's policy annotations (-want +got):\n%s", diff)
		}
		wantGroup := &securityv1beta1.AuthorizationPolicy{Rules: []*securityv1beta1.Rule{{
			From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: []string{gatewayPrincipal, pipelinesUI}}}},
			When: []*securityv1beta1.Condition{{Key: "request.headers[kubeflow-groups]", Values: []string{"readers", "readers,*", "*,readers"}}},
		}}}
		if diff := cmp.Diff(wantGroup, &ps[readersView].Spec, protocmp.Transform()); diff != "" {
			t.Errorf("the group's policy (-want +got):\n%s", diff)
		}
	})

	t.Run("a changed role: the old binding and policy go, the new ones come", func(t *testing.T) {
		before := kfamList(t, name)
		declare(t, name, entry("User", "alice@example.org", "view"), entry("User", "bob@example.org", "view"), entry("Group", "readers", "view"))
		waitOwned(t, name, []string{aliceView, bobView, readersView}, []string{aliceView, bobView, readersView})
		waitKFAMList(t, name, "Group readers view", "User alice@example.org view", "User bob@example.org view", "User zed@example.org view")
		for _, n := range []string{aliceEdit} {
			if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: n}, &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
				t.Errorf("old binding %s: %v, want NotFound (KFAM listed %v before)", n, err, before)
			}
		}
	})

	t.Run("a removed entry is revoked, and nothing else", func(t *testing.T) {
		declare(t, name, entry("User", "alice@example.org", "view"), entry("Group", "readers", "view"))
		waitOwned(t, name, []string{aliceView, readersView}, []string{aliceView, readersView})
		waitKFAMList(t, name, "Group readers view", "User alice@example.org view", "User zed@example.org view")
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "4 objects in sync")
	})

	t.Run("removing the plugin revokes all of ours, and the dashboard's stay", func(t *testing.T) {
		declare(t, name)
		waitOwned(t, name, nil, nil)
		waitKFAMList(t, name, "User zed@example.org view")
		unchanged(t, zedRB, zedAP)
	})
}

// A pass with nothing changed sends no request that writes.
func TestResyncWritesNothing(t *testing.T) {
	h := testhost.Start(t, env, testhost.Plugin{Def: contributors.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults([]byte(hostConfig)),
		reconcilers.WithResync(300 * time.Millisecond),
	}})
	name := uniqueName("quiet")
	testhost.NewProfile(t, env.Client, name, nil, plugin(entry("User", "alice@example.org", "edit"), entry("Group", "readers", "view")))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "4 objects in sync")
	if got := h.ResyncWrites(t, 3, contributors.Kind); len(got) != 0 {
		t.Errorf("mutating requests on resync = %v, want none", got)
	}
}

// A contributor added in the dashboard before the Profile declared the same
// person and role is left exactly as it is; the condition says what to do,
// and once it is deleted the Profile's own objects come within seconds.
func TestHandMadeBindingOfTheWantedName(t *testing.T) {
	start(t)
	name := uniqueName("kfam")
	testhost.NewProfile(t, env.Client, name, nil)
	rb, ap := handMade(t, name, "alice@example.org", "edit")

	declare(t, name, entry("User", "alice@example.org", "edit"), entry("User", "bob@example.org", "view"))
	c := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "Conflict")
	for _, want := range []string{`contributors[0] (User "alice@example.org", role "edit")`, "RoleBinding and AuthorizationPolicy " + aliceEdit + " were made outside profilekit", "delete them", "remove the entry"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("condition %q does not say %q", c.Message, want)
		}
	}
	waitOwned(t, name, []string{bobView}, []string{bobView})
	unchanged(t, rb, ap)
	waitKFAMList(t, name, "User alice@example.org edit", "User bob@example.org view")

	for _, o := range []client.Object{ap, rb} {
		if err := env.Client.Delete(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	waitOwned(t, name, []string{aliceEdit, bobView}, []string{aliceEdit, bobView})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "4 objects in sync")
}

// KFAM's delete of a declared contributor (its RoleBinding, then its
// AuthorizationPolicy) is undone on the next pass: the Profile wins.
func TestDeletedBindingComesBack(t *testing.T) {
	start(t)
	name := uniqueName("back")
	testhost.NewProfile(t, env.Client, name, nil, plugin(entry("User", "alice@example.org", "edit")))
	waitOwned(t, name, []string{aliceEdit}, []string{aliceEdit})
	bs, ps := owned(t, name)
	rb, ap := bs[aliceEdit], ps[aliceEdit]
	for _, o := range []client.Object{&rb, ap} {
		if err := env.Client.Delete(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		bs, ps := owned(t, name)
		newRB, okRB := bs[aliceEdit]
		newAP, okAP := ps[aliceEdit]
		return okRB && okAP && newRB.UID != rb.UID && newAP.UID != ap.UID, fmt.Sprintf("binding back %v, policy back %v", okRB, okAP)
	})
	waitKFAMList(t, name, "User alice@example.org edit")
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "2 objects in sync")
	// What the operator sees: the pass succeeded, so the host records no
	// Event (the metric and the log at verbosity 1 count the re-creation).
	if evs := testhost.Events(t, env.Client, name); len(evs) != 0 {
		t.Errorf("Events about the Profile: %v, want none", evs)
	}
}

// Each host limit refuses only its own entry; an entry that becomes
// refused loses what it had.
func TestHostLimitsRefuseOnlyTheirEntry(t *testing.T) {
	start(t)
	name := uniqueName("limits")
	testhost.NewProfile(t, env.Client, name, nil, plugin(entry("User", "alice@example.org", "edit"), entry("User", "frank@example.org", "view")))
	frankView := contributors.BindingName("User", "frank@example.org", "view")
	waitOwned(t, name, []string{aliceEdit, frankView}, []string{aliceEdit, frankView})

	declare(t, name,
		entry("User", "alice@example.org", "edit"),
		entry("User", "frank@example.org", "admin"), // admin is off by default
		entry("User", "eve@evil.org", "view"),       // outside the domain
		entry("User", "bob@example.org", "view"),
		entry("User", "carol@example.org", "view"), // the fifth of at most four
	)
	c := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "InvalidSpec")
	for _, want := range []string{
		`contributors[1] (User "frank@example.org", role "admin"): role admin is not among the roles the host allows`,
		`contributors[2] (User "eve@evil.org", role "view"): user "eve@evil.org" matches none of the host's user domains`,
		`contributors[4] (User "carol@example.org", role "view"): the host allows at most 4 contributors`,
	} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("condition %q does not say %q", c.Message, want)
		}
	}
	if n := strings.Count(c.Message, "\n"); n != 2 {
		t.Errorf("condition has %d lines, want 3:\n%s", n+1, c.Message)
	}
	waitOwned(t, name, []string{aliceEdit, bobView}, []string{aliceEdit, bobView})
	waitKFAMList(t, name, "User alice@example.org edit", "User bob@example.org view")
}

// getPolicy reads one AuthorizationPolicy.
func getPolicy(t *testing.T, ns, name string) (*securityv1.AuthorizationPolicy, error) {
	t.Helper()
	var ap securityv1.AuthorizationPolicy
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &ap)
	return &ap, err
}

// A contributor added in the dashboard that the Profile now declares, taken
// over in KFAM's delete order: its RoleBinding goes, the Profile's pass
// writes ours and meets KFAM's policy, and the policy goes right after.
// Nothing else changes, yet the contributor gets its mesh access back
// within seconds: the policy's deletion is heard, and the condition does
// not keep naming it.
func TestTakeOverInKFAMsDeleteOrder(t *testing.T) {
	start(t)
	name := uniqueName("order")
	testhost.NewProfile(t, env.Client, name, nil)
	rb, ap := handMade(t, name, "alice@example.org", "edit")
	declare(t, name, entry("User", "alice@example.org", "edit"))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "RoleBinding and AuthorizationPolicy "+aliceEdit+" were made outside profilekit")

	if err := env.Client.Delete(t.Context(), rb); err != nil {
		t.Fatal(err)
	}
	waitOwned(t, name, []string{aliceEdit}, nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "AuthorizationPolicy "+aliceEdit+" was made outside profilekit")
	if err := env.Client.Delete(t.Context(), ap); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 5*time.Second, func() (bool, string) {
		_, ps := owned(t, name)
		_, ok := ps[aliceEdit]
		return ok, "our AuthorizationPolicy " + aliceEdit + " is not there"
	})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "2 objects in sync")
}
