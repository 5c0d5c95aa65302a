package replicate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/replicate"
)

func secret(ns, name string, typ corev1.SecretType, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: typ, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// asJSON renders a copy's apply configuration as plain JSON for comparison.
func asJSON(t *testing.T, c replicate.Copy) map[string]any {
	t.Helper()
	b, err := json.Marshal(c.Object)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestBuild(t *testing.T) {
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	pull := &replicate.Source{ID: "pull", Kind: replicate.KindSecret, Namespace: "platform", Name: "regcred"}
	renamed := &replicate.Source{ID: "pull", Kind: replicate.KindSecret, Namespace: "platform", Name: "regcred", CopyName: "pull",
		Keys: []replicate.Key{{Key: "a", As: "b"}, {Key: "missing"}}}
	ca := &replicate.Source{ID: "ca", Kind: replicate.KindConfigMap, Namespace: "platform", Name: "ca", Keys: []replicate.Key{{Key: "ca.crt"}}}
	sel := &replicate.Source{ID: "store", Kind: replicate.KindSecret, Namespace: "platform",
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}, CopyPrefix: "s-"}
	meta := func(kind, name, id, from string) map[string]any {
		return map[string]any{"name": name, "namespace": "team-a", "annotations": map[string]any{replicate.AnnotationSource: id, replicate.AnnotationFrom: from}}
	}
	tests := []struct {
		reason  string
		found   []replicate.Found
		want    []map[string]any
		wantErr string
	}{
		{reason: "nothing found, nothing copied", found: []replicate.Found{{Source: pull}}},
		{
			reason: "a Secret is copied whole, with its type",
			found:  []replicate.Found{{Source: pull, Objects: []client.Object{secret("platform", "regcred", corev1.SecretTypeDockerConfigJson, map[string]string{".dockerconfigjson": "{}"})}}},
			want: []map[string]any{{"kind": "Secret", "apiVersion": "v1", "metadata": meta("Secret", "regcred", "pull", "platform/regcred"),
				"type": "kubernetes.io/dockerconfigjson", "data": map[string]any{".dockerconfigjson": "e30="}}},
		},
		{
			reason: "keys are filtered and renamed; a key the source lacks is left out",
			found:  []replicate.Found{{Source: renamed, Objects: []client.Object{secret("platform", "regcred", "", map[string]string{"a": "1", "c": "3"})}}},
			want: []map[string]any{{"kind": "Secret", "apiVersion": "v1", "metadata": meta("Secret", "pull", "pull", "platform/regcred"),
				"data": map[string]any{"b": "MQ=="}}},
		},
		{
			reason: "a ConfigMap keeps only the listed keys of data and binaryData",
			found: []replicate.Found{{Source: ca, Objects: []client.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "ca"},
				Data: map[string]string{"ca.crt": "PEM", "other": "x"}, BinaryData: map[string][]byte{"bin": {1}}}}}},
			want: []map[string]any{{"kind": "ConfigMap", "apiVersion": "v1", "metadata": meta("ConfigMap", "ca", "ca", "platform/ca"),
				"data": map[string]any{"ca.crt": "PEM"}}},
		},
		{
			reason: "a selector source copies each object under the prefix, sorted",
			found: []replicate.Found{{Source: sel, Objects: []client.Object{
				secret("platform", "two", "", map[string]string{"k": "2"}), secret("platform", "one", "", map[string]string{"k": "1"})}}},
			want: []map[string]any{
				{"kind": "Secret", "apiVersion": "v1", "metadata": meta("Secret", "s-one", "store", "platform/one"), "data": map[string]any{"k": "MQ=="}},
				{"kind": "Secret", "apiVersion": "v1", "metadata": meta("Secret", "s-two", "store", "platform/two"), "data": map[string]any{"k": "Mg=="}},
			},
		},
		{
			reason: "two objects with one copy name are refused, naming both",
			found: []replicate.Found{
				{Source: pull, Objects: []client.Object{secret("platform", "regcred", "", nil)}},
				{Source: &replicate.Source{ID: "other", Kind: replicate.KindSecret, Namespace: "platform", Selector: sel.Selector}, Objects: []client.Object{secret("platform", "regcred", "", nil)}},
			},
			wantErr: `Secret "regcred" in namespace team-a would be the copy of both platform/regcred (source pull) and platform/regcred (source other)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			copies, err := replicate.Build(p, tt.found)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !plugins.IsTerminal(err) {
					t.Fatalf("Build error = %v, want a terminal error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			var got []map[string]any
			for _, c := range copies {
				got = append(got, asJSON(t, c))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("copies (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScopes: the host watches a name source's object by its name and a
// selector source's objects by its selector, each of its kind only.
func TestScopes(t *testing.T) {
	cfg := replicate.NewConfig()
	cfg.Sources = []replicate.Source{
		{ID: "named", Kind: replicate.KindSecret, Namespace: "p", Name: "a"},
		{ID: "shared", Kind: replicate.KindSecret, Namespace: "q", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"share": "yes"}}},
		{ID: "settings", Kind: replicate.KindConfigMap, Namespace: "p", Name: "b"},
	}
	type scope struct{ Namespace, Name, Labels string }
	var got []scope
	for _, sc := range replicate.Scopes(cfg, replicate.KindSecret) {
		s := scope{Namespace: sc.Namespace, Name: sc.Name}
		if sc.Labels != nil {
			s.Labels = sc.Labels.String()
		}
		got = append(got, s)
	}
	want := []scope{{Namespace: "p", Name: "a"}, {Namespace: "q", Labels: "share=yes"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the Secrets' scopes (-want +got):\n%s", diff)
	}
}

// TestCarries: a change to a Secret wakes the Profiles that get a source
// it may concern: a name source's object by its name, and any object in a
// selector source's namespace, whatever its labels (one that stops matching
// must still be reported); never a ConfigMap's source, nor another
// namespace's.
func TestCarries(t *testing.T) {
	cfg := replicate.NewConfig()
	cfg.Sources = []replicate.Source{
		{ID: "named", Kind: replicate.KindSecret, Namespace: "p", Name: "a"},
		{ID: "shared", Kind: replicate.KindSecret, Namespace: "q", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"share": "yes"}}},
		{ID: "settings", Kind: replicate.KindConfigMap, Namespace: "r", Name: "c"},
	}
	carries := replicate.Definition().Watches[0].Carries
	profile := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	for _, tc := range []struct {
		namespace, name string
		want            bool
	}{
		{"p", "a", true}, {"p", "b", false}, {"q", "anything", true}, {"r", "c", false}, {"s", "a", false},
	} {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tc.namespace, Name: tc.name}}
		if got := carries(secret, profile, cfg); got != tc.want {
			t.Errorf("a change to Secret %s/%s wakes the Profile: %v, want %v", tc.namespace, tc.name, got, tc.want)
		}
	}
}

func TestFor(t *testing.T) {
	cfg := replicate.NewConfig()
	cfg.Sources = []replicate.Source{
		{ID: "all", Kind: replicate.KindSecret, Namespace: "p", Name: "a"},
		{ID: "gpu", Kind: replicate.KindSecret, Namespace: "p", Name: "b", ProfileSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"gpu": "yes"}}},
		{ID: "opt", Kind: replicate.KindSecret, Namespace: "p", Name: "c", OptIn: true},
	}
	tests := []struct {
		reason  string
		labels  map[string]string
		include []string
		want    []string
	}{
		{reason: "a plain Profile gets the sources for all", want: []string{"all"}},
		{reason: "a profileSelector adds a source for matching Profiles", labels: map[string]string{"gpu": "yes"}, want: []string{"all", "gpu"}},
		{reason: "an optIn source needs include", include: []string{"opt"}, want: []string{"all", "opt"}},
		{reason: "include cannot get past a profileSelector", include: []string{"gpu"}, want: []string{"all"}},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			c := *cfg
			c.Include = tt.include
			p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: tt.labels}}
			var got []string
			for _, s := range c.For(p) {
				got = append(got, s.ID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	good := func() replicate.Source {
		return replicate.Source{ID: "pull", Kind: replicate.KindSecret, Namespace: "platform", Name: "regcred"}
	}
	selected := func(prefix string) replicate.Source {
		return replicate.Source{ID: "shared", Kind: replicate.KindConfigMap, Namespace: "platform", CopyPrefix: prefix,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"share": "yes"}}}
	}
	testhost.CheckValidate(t, replicate.NewConfig, []testhost.ConfigCase[*replicate.Config]{
		{Name: "built-in defaults are valid", Edit: func(*replicate.Config) {}},
		{Name: "a name source is valid", Edit: func(c *replicate.Config) { c.Sources = []replicate.Source{good()} }},
		{Name: "an unknown kind", Edit: func(c *replicate.Config) { s := good(); s.Kind = "Pod"; c.Sources = []replicate.Source{s} }, Want: `sources[pull].kind "Pod": want Secret or ConfigMap`},
		{Name: "neither name nor selector", Edit: func(c *replicate.Config) { s := good(); s.Name = ""; c.Sources = []replicate.Source{s} }, Want: "sources[pull]: set name or selector"},
		{Name: "an empty selector would copy a whole namespace", Edit: func(c *replicate.Config) {
			s := good()
			s.Name = ""
			s.Selector = &metav1.LabelSelector{}
			c.Sources = []replicate.Source{s}
		}, Want: "sources[pull].selector: empty"},
		{Name: "ids are unique", Edit: func(c *replicate.Config) { c.Sources = []replicate.Source{good(), good()} }, Want: `sources[pull].id "pull": given twice`},
		{Name: "two sources with one copy name", Edit: func(c *replicate.Config) {
			s := good()
			s.ID = "other"
			s.Name = "else"
			s.CopyName = "regcred"
			c.Sources = []replicate.Source{good(), s}
		}, Want: `its copy Secret "regcred" is also sources[pull]'s`},
		{Name: "upstream's names are refused", Edit: func(c *replicate.Config) {
			s := good()
			s.CopyName = "default-editor"
			c.Sources = []replicate.Source{s}
		}, Want: "belongs to the upstream profile controller"},
		{Name: "a bad key", Edit: func(c *replicate.Config) {
			s := good()
			s.Keys = []replicate.Key{{Key: "a/b"}}
			c.Sources = []replicate.Source{s}
		}, Want: `sources[pull].keys[0].key "a/b"`},
		{Name: "include names only offered sources", Edit: func(c *replicate.Config) {
			c.Sources = []replicate.Source{good()}
			c.Include = []string{"kube-system-token"}
		}, Want: `include[0] "kube-system-token": the host offers no such source (offered: pull)`},
		{Name: "a bad policy", Edit: func(c *replicate.Config) { c.OnSourceDeleted = "Orphan" }, Want: `onSourceDeleted: "Orphan": want Retain or Delete`},
		{Name: "a bad policy of a source", Edit: func(c *replicate.Config) {
			s := good()
			s.OnSourceDeleted = "Orphan"
			c.Sources = []replicate.Source{s}
		}, Want: `sources[pull].onSourceDeleted: "Orphan": want Retain or Delete`},
		{Name: "a source namespace that is not a name", Edit: func(c *replicate.Config) { s := good(); s.Namespace = "Platform"; c.Sources = []replicate.Source{s} }, Want: `sources[pull].namespace "Platform"`},
		{Name: "a source name that is not a name", Edit: func(c *replicate.Config) { s := good(); s.Name = "reg_cred"; c.Sources = []replicate.Source{s} }, Want: `sources[pull].name "reg_cred"`},
		{Name: "both name and selector", Edit: func(c *replicate.Config) {
			s := good()
			s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"share": "yes"}}
			c.Sources = []replicate.Source{s}
		}, Want: "sources[pull]: set name or selector, not both"},
		{Name: "a copy prefix on a name source", Edit: func(c *replicate.Config) { s := good(); s.CopyPrefix = "team-"; c.Sources = []replicate.Source{s} }, Want: `sources[pull].copyPrefix "team-": only for a selector source`},
		{Name: "a copy name that is not a name", Edit: func(c *replicate.Config) { s := good(); s.CopyName = "Reg"; c.Sources = []replicate.Source{s} }, Want: `sources[pull].copyName "Reg"`},
		{Name: "a selector source with a prefix", Edit: func(c *replicate.Config) { c.Sources = []replicate.Source{selected("team-")} }},
		{Name: "a selector source with a prefix that makes no name", Edit: func(c *replicate.Config) { c.Sources = []replicate.Source{selected("Team_")} }, Want: `sources[shared].copyPrefix "Team_"`},
		{Name: "a copy name on a selector source", Edit: func(c *replicate.Config) {
			s := selected("")
			s.CopyName = "one"
			c.Sources = []replicate.Source{s}
		}, Want: `sources[shared].copyName "one": only for a name source`},
		{Name: "a selector that does not parse", Edit: func(c *replicate.Config) {
			s := selected("")
			s.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "share", Operator: "Near"}}
			c.Sources = []replicate.Source{s}
		}, Want: "sources[shared].selector: "},
		{Name: "a Profile selector", Edit: func(c *replicate.Config) {
			s := good()
			s.ProfileSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}
			c.Sources = []replicate.Source{s}
		}},
		{Name: "a Profile selector that does not parse", Edit: func(c *replicate.Config) {
			s := good()
			s.ProfileSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}
			c.Sources = []replicate.Source{s}
		}, Want: "sources[pull].profileSelector: "},
		{Name: "two keys copied as one", Edit: func(c *replicate.Config) {
			s := good()
			s.Keys = []replicate.Key{{Key: "a"}, {Key: "b", As: "a"}}
			c.Sources = []replicate.Source{s}
		}, Want: `sources[pull].keys[1]: key "a" in the copy is given twice`},
	})
}
