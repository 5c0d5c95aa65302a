package outside_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

func ownedProfile(name, uid string, owner rbacv1.Subject) *kubeflowv1.Profile {
	return &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)}, Spec: kubeflowv1.ProfileSpec{Owner: owner}}
}

var (
	alice   = rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice@example.org"}
	mallory = rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory@example.org"}
)

// tenureOf returns the *TenureError in err, or nil.
func tenureOf(err error) *outside.TenureError {
	var te *outside.TenureError
	if errors.As(err, &te) {
		return te
	}
	return nil
}

// TestTenureFollowsTheOwner walks one name through its owners: the first
// Profile takes it, a Profile of the name of another owner is refused with
// a terminal Conflict that names neither the holder nor its Profile, the
// holder's next Profile gets it back, and only a release hands it over.
func TestTenureFollowsTheOwner(t *testing.T) {
	ctx := t.Context()
	c := outsideClient(t)
	ten := outside.Tenures{Reader: c, Writer: c}

	first := ownedProfile("team-x", "uid-1", alice)
	if err := ten.Hold(ctx, first); err != nil {
		t.Fatalf("the first Profile of the name: %v", err)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: outside.DefaultRecordsNamespace, Name: outside.TenureName("team-x")}, &cm); err != nil {
		t.Fatalf("tenure record: %v", err)
	}
	if diff := cmp.Diff(map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelRole: outside.RoleTenure, plugins.LabelProfile: "team-x"}, cm.Labels); diff != "" {
		t.Errorf("tenure labels (-want +got):\n%s", diff)
	}
	if len(cm.OwnerReferences) != 0 {
		t.Errorf("the tenure is owned by %v: it would go with the Profile", cm.OwnerReferences)
	}
	for _, v := range cm.Data {
		if strings.Contains(v, "alice") {
			t.Errorf("the tenure holds the owner's identity: %v", cm.Data)
		}
	}

	next := ownedProfile("team-x", "uid-2", mallory)
	err := ten.Hold(ctx, next)
	te := tenureOf(err)
	if te == nil || !plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != plugins.ReasonConflict {
		t.Fatalf("another owner's Profile of the name: %v, want a terminal Conflict with a TenureError", err)
	}
	if te.Held {
		t.Errorf("TenureError.Held for a Profile that never held the name")
	}
	for _, leak := range []string{"alice", "uid-1"} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("the refusal names the holder (%s): %v", leak, err)
		}
	}
	if !strings.Contains(err.Error(), "profilekit tenure release team-x") || !strings.Contains(err.Error(), outside.TenureName("team-x")) {
		t.Errorf("the refusal does not say how to hand the name over: %v", err)
	}
	if err := ten.Check(ctx, next); tenureOf(err) == nil {
		t.Errorf("Check of another owner's Profile: %v, want the TenureError", err)
	}

	// The same owner, written without the API group as kubectl does.
	back := ownedProfile("team-x", "uid-3", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice@example.org"})
	if err := ten.Hold(ctx, back); err != nil {
		t.Fatalf("the holder's next Profile: %v", err)
	}
	// Her Profile's owner changed: refused, and marked as once held.
	changed := ownedProfile("team-x", "uid-3", mallory)
	if te := tenureOf(ten.Hold(ctx, changed)); te == nil || !te.Held {
		t.Errorf("the holder's Profile after its owner changed: %+v, want a TenureError with Held", te)
	}

	released, err := ten.Release(ctx, "team-x")
	if err != nil || !released {
		t.Fatalf("release: %v, %v", released, err)
	}
	if err := ten.Hold(ctx, next); err != nil {
		t.Errorf("another owner after the release: %v", err)
	}
	if err := ten.Check(ctx, back); tenureOf(err) == nil {
		t.Errorf("the earlier owner after the hand-over: %v, want the TenureError", err)
	}
	if released, err := ten.Release(ctx, "team-y"); err != nil || released {
		t.Errorf("release of a name no one holds: %v, %v", released, err)
	}
}

// TestTenureSeedWritesOnce: a host's first start takes every Profile's
// name that no record holds; a second start writes nothing.
func TestTenureSeedWritesOnce(t *testing.T) {
	ctx := t.Context()
	c := outsideClient(t)
	ten := outside.Tenures{Reader: c, Writer: c}
	if err := ten.Hold(ctx, ownedProfile("held", "u0", mallory)); err != nil {
		t.Fatal(err)
	}
	profiles := []kubeflowv1.Profile{*ownedProfile("a", "u1", alice), *ownedProfile("b", "u2", mallory), *ownedProfile("held", "u3", alice),
		*ownedProfile("ownerless", "u4", rbacv1.Subject{})}
	n, err := ten.Seed(ctx, profiles)
	if err != nil || n != 3 {
		t.Fatalf("first seed wrote %d (%v), want 3", n, err)
	}
	if n, err := ten.Seed(ctx, profiles); err != nil || n != 0 {
		t.Errorf("second seed wrote %d (%v), want 0", n, err)
	}
	if err := ten.Check(ctx, &profiles[2]); tenureOf(err) == nil {
		t.Errorf("seeding took a name another owner held: %v", err)
	}
}

// TestPredecessorsAreTheOwnersEarlierProfiles: a Profile learns the UIDs of
// the earlier Profiles of its name that its owner held, and nothing of
// another owner's.
func TestPredecessorsAreTheOwnersEarlierProfiles(t *testing.T) {
	ctx := t.Context()
	c := outsideClient(t)
	ten := outside.Tenures{Reader: c, Writer: c}
	for _, p := range []*kubeflowv1.Profile{ownedProfile("team-x", "uid-1", alice), ownedProfile("team-x", "uid-2", alice), ownedProfile("team-x", "uid-3", alice)} {
		if err := ten.Hold(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	third := ownedProfile("team-x", "uid-3", alice)
	got, err := outside.New(c, "test", third, outside.Options{}).Predecessors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"uid-1", "uid-2"}, got); diff != "" {
		t.Errorf("alice's predecessors (-want +got):\n%s", diff)
	}
	if got, err := outside.New(c, "test", ownedProfile("team-x", "uid-4", mallory), outside.Options{}).Predecessors(ctx); err != nil || len(got) != 0 {
		t.Errorf("mallory's predecessors = %v (%v), want none", got, err)
	}
}

// A cache may not show a tenure yet, or still show one that was released:
// Check and Hold then ask the API server (Live), and trust the cache when
// it shows the name held by the Profile's own owner.
func TestTenureLooksPastTheCache(t *testing.T) {
	ctx := t.Context()
	c := outsideClient(t)
	name := outside.TenureName("team-x")
	if err := (outside.Tenures{Reader: c, Writer: c}).Hold(ctx, ownedProfile("team-x", "uid-1", alice)); err != nil {
		t.Fatal(err)
	}
	var held corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: outside.DefaultRecordsNamespace, Name: name}, &held); err != nil {
		t.Fatal(err)
	}

	live := &countingReader{Reader: c}
	unseen := outside.Tenures{Reader: cacheView{Client: c, shows: map[string]*corev1.ConfigMap{name: nil}}, Live: live, Writer: c}
	if err := unseen.Check(ctx, ownedProfile("team-x", "uid-2", mallory)); tenureOf(err) == nil {
		t.Errorf("another owner, the cache not showing the tenure yet: %v, want the TenureError", err)
	}

	live.n = 0
	shown := outside.Tenures{Reader: cacheView{Client: c, shows: map[string]*corev1.ConfigMap{name: &held}}, Live: live, Writer: c}
	if err := shown.Check(ctx, ownedProfile("team-x", "uid-1", alice)); err != nil || live.n != 0 {
		t.Errorf("the holder, shown by the cache: %v with %d reads from the API server; want nil and none", err, live.n)
	}

	if _, err := shown.Release(ctx, "team-x"); err != nil {
		t.Fatal(err)
	}
	if err := shown.Hold(ctx, ownedProfile("team-x", "uid-2", mallory)); err != nil {
		t.Errorf("another owner after a release the cache does not show yet: %v, want the name", err)
	}
}

// Two passes may take one name in the same moment: the one whose create
// fails judges what the other wrote, or, when its reader cannot show it,
// tries again later.
func TestTenureTakenInTheSameMoment(t *testing.T) {
	ctx := t.Context()
	c := outsideClient(t)
	name := outside.TenureName("team-x")
	if err := (outside.Tenures{Reader: c, Writer: c}).Hold(ctx, ownedProfile("team-x", "uid-1", alice)); err != nil {
		t.Fatal(err)
	}
	reads := 0
	catchingUp := interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if key.Name == name {
				if reads++; reads == 1 {
					return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
				}
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	if err := (outside.Tenures{Reader: catchingUp, Writer: c}).Hold(ctx, ownedProfile("team-x", "uid-2", mallory)); tenureOf(err) == nil {
		t.Errorf("a create that finds the name taken by another owner: %v, want the TenureError", err)
	}

	never := outside.Tenures{Reader: cacheView{Client: c, shows: map[string]*corev1.ConfigMap{name: nil}}, Writer: c}
	err := never.Hold(ctx, ownedProfile("team-x", "uid-2", mallory))
	if err == nil || tenureOf(err) != nil || plugins.IsTerminal(err) || !strings.Contains(err.Error(), "trying again") {
		t.Errorf("a create that finds the name taken, its reader showing none: %v, want an error that is tried again", err)
	}
}

// A tenure written before it listed the holder's Profiles names the latest
// one only: that Profile is the next one's predecessor.
func TestTenureOfTheEarlierForm(t *testing.T) {
	ctx := t.Context()
	c := outsideClient(t)
	first, next := ownedProfile("team-x", "uid-1", alice), ownedProfile("team-x", "uid-2", alice)
	earlier := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: outside.DefaultRecordsNamespace, Name: outside.TenureName("team-x"),
			Labels: map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelRole: outside.RoleTenure, plugins.LabelProfile: "team-x"}},
		Data: map[string]string{"owner": outside.OwnerKey(first), "uid": "uid-1"},
	}
	if err := c.Create(ctx, earlier); err != nil {
		t.Fatal(err)
	}
	got, err := outside.New(c, "test", next, outside.Options{}).Predecessors(ctx)
	if diff := cmp.Diff([]string{"uid-1"}, got); err != nil || diff != "" {
		t.Errorf("predecessors from a tenure of the earlier form (%v) (-want +got):\n%s", err, diff)
	}
}
