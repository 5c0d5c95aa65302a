package plugins_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// TestRequestReaders: a host that keeps no cache of the watched kinds, or
// has no reader that skips its cache, leaves the field empty, and the
// plugin reads through the Client instead.
func TestRequestReaders(t *testing.T) {
	cl, live, watched := fake.NewClientBuilder().Build(), fake.NewClientBuilder().Build(), fake.NewClientBuilder().Build()
	bare := plugins.Request{Client: cl}
	if bare.LiveReader() != cl || bare.WatchedReader() != cl {
		t.Error("a request without Live and Watched does not read through its Client")
	}
	full := plugins.Request{Client: cl, Live: live, Watched: watched}
	if full.LiveReader() != live {
		t.Error("LiveReader is not Live")
	}
	if full.WatchedReader() != watched {
		t.Error("WatchedReader is not Watched")
	}
}

// TestFuncsWithoutFuncs: a Funcs without one of its functions does nothing
// for it; with one, calls it.
func TestFuncsWithoutFuncs(t *testing.T) {
	ctx := t.Context()
	if res, err := (plugins.Funcs{}).Revoke(ctx, plugins.Request{}); err != nil || len(res.Changes) != 0 {
		t.Errorf("Revoke without RevokeFunc = %v, %v", res, err)
	}
	called := errors.New("revoked")
	f := plugins.Funcs{RevokeFunc: func(context.Context, plugins.Request) (plugins.Result, error) { return plugins.Result{}, called }}
	if _, err := f.Revoke(ctx, plugins.Request{}); !errors.Is(err, called) {
		t.Errorf("Revoke with RevokeFunc = %v, want its error", err)
	}
}

// TestPaused: the annotation pauses every plugin (true) or those it lists.
func TestPaused(t *testing.T) {
	for v, want := range map[string]bool{"": false, " ": false, "true": true, "TRUE": true, "quotas": true, "rbac, Quotas": true, "rbac,network": false, "false": false} {
		p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{plugins.AnnotationPaused: v}}}
		if got := plugins.Paused(p, "quotas"); got != want {
			t.Errorf("Paused(%q, quotas) = %v, want %v", v, got, want)
		}
	}
}

// TestIsOwnedBy: all three labels must name the plugin and the Profile.
func TestIsOwnedBy(t *testing.T) {
	ours := map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: "quotas", plugins.LabelProfile: "team-a"}
	if !plugins.IsOwnedBy(ours, "quotas", "team-a") {
		t.Error("an object with our three labels is not owned")
	}
	for _, key := range []string{plugins.LabelManagedBy, plugins.LabelPlugin, plugins.LabelProfile} {
		other := map[string]string{}
		for k, v := range ours {
			other[k] = v
		}
		other[key] = "someone-else"
		if plugins.IsOwnedBy(other, "quotas", "team-a") {
			t.Errorf("an object whose %s is someone else's is owned", key)
		}
	}
}

// TestFindCondition returns the condition of the type asked for.
func TestFindCondition(t *testing.T) {
	conds := []kubeflowv1.ProfileCondition{{Type: "QuotasReady", Status: "True"}, {Type: "RbacReady", Status: "False"}}
	if c := plugins.FindCondition(conds, "RbacReady"); c == nil || c.Status != "False" {
		t.Errorf("FindCondition(RbacReady) = %v", c)
	}
	if c := plugins.FindCondition(conds, "NetworkReady"); c != nil {
		t.Errorf("FindCondition(NetworkReady) = %v, want nil", c)
	}
}

// TestListed: whether spec.plugins has an entry of the kind.
func TestListed(t *testing.T) {
	p := profileWith(demo(`{}`), kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: "rbac"}})
	if !plugins.Listed(p, "rbac") || plugins.Listed(p, "quotas") {
		t.Errorf("Listed: rbac %v, quotas %v; want true, false", plugins.Listed(p, "rbac"), plugins.Listed(p, "quotas"))
	}
}

// TestDecodeHostDefaults: the host's defaults over the built-in ones,
// validated; a refusal is the host's (InvalidConfig).
func TestDecodeHostDefaults(t *testing.T) {
	cfg, err := testDefinition().DecodeHostDefaults([]byte(`{"size":4}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&testConfig{Owner: "builtin", Size: 4, Tags: map[string]string{"a": "builtin"}}, cfg); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	for defaults, want := range map[string]string{`{"size":11}`: "plugin demo: host defaults: size must be at most 10", `{"colour":1}`: `unknown field "colour"`} {
		_, err := testDefinition().DecodeHostDefaults([]byte(defaults))
		if err == nil || !strings.Contains(err.Error(), want) || plugins.ReasonOf(err, "") != plugins.ReasonInvalidConfig {
			t.Errorf("DecodeHostDefaults(%s) = %v, want InvalidConfig %q", defaults, err, want)
		}
	}
}

// TestResultWaitAndMerge: a wait of no length is DefaultWait; a merge keeps
// the first wait and every change.
func TestResultWaitAndMerge(t *testing.T) {
	var r plugins.Result
	r.Wait(0, "Argo CD")
	if r.Waiting != "Argo CD" || r.RequeueAfter != plugins.DefaultWait || plugins.DefaultWait != 5*time.Second {
		t.Errorf("Wait(0) = %q after %v, want Argo CD after 5s", r.Waiting, r.RequeueAfter)
	}
	r.Wait(time.Minute, "the claim")
	if r.RequeueAfter != time.Minute {
		t.Errorf("Wait(1m) = after %v", r.RequeueAfter)
	}
	var a plugins.Result
	a.Add(plugins.Change{Kind: "ResourceQuota", Namespace: "a", Name: "q", Action: plugins.Created})
	a.Merge(r)
	if a.Waiting != "the claim" || a.RequeueAfter != time.Minute || len(a.Changes) != 1 {
		t.Errorf("a merge into no wait = %+v, want the other's wait", a)
	}
	var other plugins.Result
	other.Wait(time.Second, "another")
	other.Add(plugins.Change{Kind: "Role", Namespace: "a", Name: "r", Action: plugins.Deleted})
	a.Merge(other)
	if a.Waiting != "the claim" || a.RequeueAfter != time.Minute || len(a.Changes) != 2 {
		t.Errorf("a merge into a wait = %+v, want the first wait kept and both changes", a)
	}
}

// TestChangeString names namespaced objects by namespace/name.
func TestChangeString(t *testing.T) {
	for c, want := range map[plugins.Change]string{
		{Kind: "ResourceQuota", Namespace: "a", Name: "q", Action: plugins.Created}: "created ResourceQuota a/q",
		{Kind: "Namespace", Name: "a", Action: plugins.Unchanged}:                   "unchanged Namespace a",
	} {
		if got := c.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}
