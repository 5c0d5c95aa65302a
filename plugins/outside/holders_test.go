package outside_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// claims is one test's view of the claims of plugin "iam" in a records'
// namespace of its own, on the package's API server.
type claims struct {
	t    *testing.T
	opts outside.Options
}

func newClaims(t *testing.T) claims {
	return claims{t: t, opts: outside.Options{Namespace: recordsNamespace(t)}}
}

func profileOf(name string) *kubeflowv1.Profile {
	return &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
}

// outside is the Profile's Outside, its clock at now when now is set.
func (c claims) outside(p *kubeflowv1.Profile, now time.Time) *outside.Outside {
	var options []outside.Option
	if !now.IsZero() {
		options = append(options, outside.WithClock(func() time.Time { return now }))
	}
	return outside.New(env.Client, "iam", p, c.opts, options...)
}

// claim returns who holds piece, as the Profile's Claim answers.
func (c claims) claim(p *kubeflowv1.Profile, now time.Time, piece string) (string, error) {
	return c.outside(p, now).Claim(c.t.Context(), piece)
}

// get returns the claim of piece, or nil.
func (c claims) get(piece string) *corev1.ConfigMap {
	c.t.Helper()
	var cm corev1.ConfigMap
	err := env.Client.Get(c.t.Context(), client.ObjectKey{Namespace: c.opts.Namespace, Name: outside.ClaimName("iam", piece)}, &cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return &cm
}

// record writes the Profile's record as a pass does: keys made, then Flush.
func (c claims) record(p *kubeflowv1.Profile, keys ...string) {
	c.t.Helper()
	desired := map[string]any{}
	for _, k := range keys {
		desired[k] = k
	}
	pass(c.t, c.outside(p, time.Time{}), calls{}, desired)
}

// rawRecord writes the Profile's record with data as its state, as an
// earlier version or a broken write left it.
func (c claims) rawRecord(p *kubeflowv1.Profile, data string) {
	c.t.Helper()
	labels := plugins.OwnershipLabels("iam", p.Name)
	labels[plugins.LabelRole] = plugins.RoleOutsideState
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.opts.Namespace, Name: outside.RecordName("iam", p.UID), Labels: labels},
		Data: map[string]string{"state.json": data}}
	if err := env.Client.Create(c.t.Context(), cm); err != nil {
		c.t.Fatal(err)
	}
}

// TestClaimGivesAPieceToOneProfile walks a piece through its claims: the
// first Profile takes it and keeps it, a second is told to try again while
// the first may be between its claim and its record, and is told who holds
// it once the record says so; the claim goes when the record lets the
// piece go.
func TestClaimGivesAPieceToOneProfile(t *testing.T) {
	c := newClaims(t)
	alpha, beta := profileOf("alpha"), profileOf("beta")

	if holder, err := c.claim(alpha, time.Time{}, "role/x"); err != nil || holder != "" {
		t.Fatalf("the first claim = %q, %v; want the piece", holder, err)
	}
	cm := c.get("role/x")
	if cm == nil {
		t.Fatal("no claim written")
	}
	want := map[string]string{"piece": "role/x", "profile": "alpha", "uid": "uid-alpha"}
	if diff := cmp.Diff(want, cm.Data); diff != "" || cm.Labels[plugins.LabelRole] != outside.RoleClaim ||
		!plugins.IsOwnedBy(cm.Labels, "iam", "alpha") || len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != alpha.UID {
		t.Errorf("the claim: labels %v, owners %v, data (-want +got):\n%s", cm.Labels, cm.OwnerReferences, diff)
	}
	if holder, err := c.claim(alpha, time.Time{}, "role/x"); err != nil || holder != "" {
		t.Errorf("the holder's claim again = %q, %v; want the piece", holder, err)
	}

	holder, err := c.claim(beta, time.Time{}, "role/x")
	if err == nil || holder != "" || plugins.IsTerminal(err) || !strings.Contains(err.Error(), "being claimed by Profile alpha") {
		t.Errorf("another Profile's claim while the holder's record does not name it yet = %q, %v; want an error tried again", holder, err)
	}
	c.record(alpha, "role/x")
	for _, at := range []time.Time{{}, time.Now().Add(time.Hour)} {
		if holder, err := c.claim(beta, at, "role/x"); err != nil || holder != "alpha" {
			t.Errorf("another Profile's claim at %v, the holder's record naming the piece = %q, %v; want alpha", at, holder, err)
		}
	}

	// alpha lets the piece go: its claim goes with it, and beta takes it.
	o := c.outside(alpha, time.Time{})
	if err := o.Forget(t.Context(), "role/x"); err != nil {
		t.Fatal(err)
	}
	if err := o.Flush(t.Context()); err != nil {
		t.Fatalf("Flush after the piece was forgotten: %v", err)
	}
	if cm := c.get("role/x"); cm != nil {
		t.Errorf("the claim outlived the piece in the holder's record: %v", cm.Data)
	}
	if holder, err := c.claim(beta, time.Time{}, "role/x"); err != nil || holder != "" || c.get("role/x").Data["uid"] != "uid-beta" {
		t.Errorf("a claim of a piece let go = %q, %v; want it taken", holder, err)
	}
}

// A claim whose holder's record has not named its piece for ClaimGrace
// is stale: the holder let the piece go, or is gone. It is taken over.
func TestClaimTakesOverAStaleClaim(t *testing.T) {
	c := newClaims(t)
	alpha, beta := profileOf("alpha"), profileOf("beta")
	if _, err := c.claim(alpha, time.Time{}, "role/x"); err != nil {
		t.Fatal(err)
	}
	made := c.get("role/x").CreationTimestamp.Time
	holder, err := c.claim(beta, made.Add(outside.ClaimGrace-time.Second), "role/x")
	if err == nil || holder != "" {
		t.Errorf("a claim within its grace = %q, %v; want it held, and an error tried again", holder, err)
	}
	if holder, err := c.claim(beta, made.Add(outside.ClaimGrace), "role/x"); err != nil || holder != "" {
		t.Errorf("a claim at the end of its grace = %q, %v; want it taken over", holder, err)
	}
	if uid := c.get("role/x").Data["uid"]; uid != "uid-beta" {
		t.Errorf("the claim after a take-over is %s's, want uid-beta's", uid)
	}

	// A record that does not decode is as good as none for its Profile,
	// which makes every piece again: its claim holds meanwhile.
	gamma := profileOf("gamma")
	if _, err := c.claim(gamma, time.Time{}, "role/y"); err != nil {
		t.Fatal(err)
	}
	c.rawRecord(gamma, "{")
	if holder, err := c.claim(beta, time.Now().Add(time.Hour), "role/y"); err != nil || holder != "gamma" {
		t.Errorf("a claim whose holder's record does not decode = %q, %v; want gamma", holder, err)
	}
}

// Records written before claims existed are read too: a piece one of them
// holds as made (not only intended) is that Profile's, and the claim just
// made is let go, so that it does not name the wrong Profile.
func TestClaimReadsRecordsFromBeforeClaims(t *testing.T) {
	c := newClaims(t)
	alpha, beta, gamma, delta := profileOf("alpha"), profileOf("beta"), profileOf("gamma"), profileOf("delta")
	c.record(beta, "role/x", "role/xy/trust")
	if err := c.outside(gamma, time.Time{}).Intend(t.Context(), "role/z"); err != nil {
		t.Fatal(err)
	}
	c.rawRecord(delta, "{")
	c.record(alpha, "role/z")

	for _, tc := range []struct {
		reason, piece, want string
	}{
		{"a piece another record holds as made", "role/x", "beta"},
		{"a piece another record only intends, and the Profile's own record holds", "role/z", ""},
		{"a piece another record holds a key under", "role/xy", "beta"},
		{"a piece no record names", "role/free", ""},
	} {
		holder, err := c.claim(alpha, time.Time{}, tc.piece)
		if err != nil || holder != tc.want {
			t.Errorf("%s: Claim(%s) = %q, %v; want %q", tc.reason, tc.piece, holder, err, tc.want)
		}
		if cm := c.get(tc.piece); (cm != nil) != (tc.want == "") {
			t.Errorf("%s: claim of %s present: %t, want %t", tc.reason, tc.piece, cm != nil, tc.want == "")
		}
	}
}

// Offline (the admission webhook), Claim reads who holds a piece and
// writes nothing.
func TestClaimOffline(t *testing.T) {
	c := newClaims(t)
	alpha, beta := profileOf("alpha"), profileOf("beta")
	c.record(alpha, "role/x")
	for _, piece := range []string{"role/x", "role/y"} {
		if _, err := c.claim(alpha, time.Time{}, piece); err != nil {
			t.Fatal(err)
		}
	}
	unborn := profileOf("alpha")
	unborn.UID = ""
	for _, tc := range []struct {
		reason  string
		profile *kubeflowv1.Profile
		piece   string
		options []outside.Option
		want    string
	}{
		{"a piece another Profile holds", beta, "role/x", []outside.Option{outside.WithClaimsFrom(env.Client, c.opts.Namespace)}, "alpha"},
		{"the Profile's own piece", alpha, "role/x", []outside.Option{outside.WithClaimsFrom(env.Client, c.opts.Namespace)}, ""},
		{"the Profile's own piece, before it has a UID", unborn, "role/x", []outside.Option{outside.WithClaimsFrom(env.Client, c.opts.Namespace)}, ""},
		{"a claim whose holder's record does not name it", beta, "role/y", []outside.Option{outside.WithClaimsFrom(env.Client, c.opts.Namespace)}, ""},
		{"a piece no one claims", beta, "role/z", []outside.Option{outside.WithClaimsFrom(env.Client, c.opts.Namespace)}, ""},
		{"no reader: nothing known", beta, "role/x", nil, ""},
	} {
		holder, err := outside.NewOffline("iam", tc.profile, tc.options...).Claim(t.Context(), tc.piece)
		if err != nil || holder != tc.want {
			t.Errorf("%s: offline Claim(%s) = %q, %v; want %q", tc.reason, tc.piece, holder, err, tc.want)
		}
	}
	if cm := c.get("role/z"); cm != nil {
		t.Errorf("an offline Claim wrote a claim: %v", cm.Data)
	}
}
