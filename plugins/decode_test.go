package plugins_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

type testConfig struct {
	Owner  string            `json:"owner,omitempty" profilekit:"hostonly"`
	Size   int               `json:"size,omitempty"`
	Tags   map[string]string `json:"tags,omitempty"`
	Nested struct {
		Deep []string `json:"deep,omitempty"`
	} `json:"nested,omitempty"`
	Limits corev1.ResourceList   `json:"limits,omitempty"`
	Quotas []corev1.ResourceList `json:"quotas,omitempty"`
}

func (c *testConfig) Validate() error {
	if c.Size > 10 {
		return errors.New("size must be at most 10")
	}
	return nil
}

func testDefinition() plugins.Definition {
	return plugins.Definition{
		Plugin:    plugins.Funcs{KindName: "demo"},
		NewConfig: func() any { return &testConfig{Owner: "builtin", Size: 1, Tags: map[string]string{"a": "builtin"}} },
	}
}

func profileWith(entries ...kubeflowv1.Plugin) *kubeflowv1.Profile {
	return &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: kubeflowv1.ProfileSpec{Plugins: entries}}
}

func demo(spec string) kubeflowv1.Plugin {
	return kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: "demo"}, Spec: &runtime.RawExtension{Raw: []byte(spec)}}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		reason     string
		defaults   string
		profile    *kubeflowv1.Profile
		want       *testConfig
		wantErr    string
		wantReason string
	}{
		{
			reason:  "built-in defaults when nothing else is given",
			profile: profileWith(),
			want:    &testConfig{Owner: "builtin", Size: 1, Tags: map[string]string{"a": "builtin"}},
		},
		{
			reason:   "host defaults over built-in, Profile over host, maps merged",
			defaults: `{"owner":"host","size":2,"tags":{"b":"host"}}`,
			profile:  profileWith(demo(`{"size":3,"tags":{"c":"profile"}}`)),
			want:     &testConfig{Owner: "host", Size: 3, Tags: map[string]string{"a": "builtin", "b": "host", "c": "profile"}},
		},
		{reason: "a null spec is no spec", profile: profileWith(demo(`null`)), want: &testConfig{Owner: "builtin", Size: 1, Tags: map[string]string{"a": "builtin"}}},
		{reason: "a blank spec is no spec", profile: profileWith(demo(" \n")), want: &testConfig{Owner: "builtin", Size: 1, Tags: map[string]string{"a": "builtin"}}},
		{reason: "an unknown nested field", profile: profileWith(demo(`{"nested":{"deeep":[]}}`)), wantErr: `spec.plugins[0] (demo).spec: unknown field "nested.deeep"`, wantReason: plugins.ReasonInvalidSpec},
		{reason: "a mistyped field", profile: profileWith(demo(`{"size":"big"}`)), wantErr: `spec.plugins[0] (demo).spec: field "size": cannot use string as int`, wantReason: plugins.ReasonInvalidSpec},
		{reason: "a mistyped item of a list is named by its index", profile: profileWith(demo(`{"nested":{"deep":["a",3]}}`)), wantErr: `spec.plugins[0] (demo).spec: field "nested.deep[1]": cannot use number as string`, wantReason: plugins.ReasonInvalidSpec},
		{reason: "a duplicated field", profile: profileWith(demo(`{"size":1,"size":2}`)), wantErr: `duplicate field "size"`, wantReason: plugins.ReasonInvalidSpec},
		{reason: "a host-only field from a Profile", profile: profileWith(demo(`{"owner":"me"}`)), wantErr: `spec.plugins[0] (demo).spec: field "owner" is set by the host only`, wantReason: plugins.ReasonInvalidSpec},
		{reason: "validation runs last", profile: profileWith(demo(`{"size":11}`)), wantErr: "spec.plugins[0] (demo).spec: size must be at most 10", wantReason: plugins.ReasonInvalidSpec},
		{reason: "two entries of one kind", profile: profileWith(demo(`{}`), demo(`{}`)), wantErr: `spec.plugins[1] (demo): kind "demo" is listed more than once (also at spec.plugins[0])`, wantReason: plugins.ReasonInvalidSpec},
		{reason: "an array is not a spec", profile: profileWith(demo(`[1,2]`)), wantErr: "spec.plugins[0] (demo).spec: must be an object, got an array", wantReason: plugins.ReasonInvalidSpec},
		{reason: "a string is not a spec", profile: profileWith(demo(`"size: 3"`)), wantErr: "spec.plugins[0] (demo).spec: must be an object, got a string", wantReason: plugins.ReasonInvalidSpec},
		{reason: "a boolean is not a spec", profile: profileWith(demo(`false`)), wantErr: "spec.plugins[0] (demo).spec: must be an object, got a boolean", wantReason: plugins.ReasonInvalidSpec},
		{reason: "a number is not a spec", profile: profileWith(demo(`-3`)), wantErr: "spec.plugins[0] (demo).spec: must be an object, got a number", wantReason: plugins.ReasonInvalidSpec},
		{reason: "the lowest digit starts a number", profile: profileWith(demo(`0`)), wantErr: "spec.plugins[0] (demo).spec: must be an object, got a number", wantReason: plugins.ReasonInvalidSpec},
		{reason: "the highest digit starts a number", profile: profileWith(demo(`9`)), wantErr: "spec.plugins[0] (demo).spec: must be an object, got a number", wantReason: plugins.ReasonInvalidSpec},
		{reason: "what starts no JSON value", profile: profileWith(demo(`size: 3`)), wantErr: "spec.plugins[0] (demo).spec: must be an object, got something that is not JSON", wantReason: plugins.ReasonInvalidSpec},
		{reason: "a value its type refuses in a list is named by its index", profile: profileWith(demo(`{"quotas":[{"cpu":"1"},{"cpu":"lots"}]}`)), wantErr: `spec.plugins[0] (demo).spec: field "quotas[1][cpu]": "lots" is not a quantity`, wantReason: plugins.ReasonInvalidSpec},
		{reason: "a list that is not a list is named", profile: profileWith(demo(`{"quotas":{"cpu":"1"}}`)), wantErr: `spec.plugins[0] (demo).spec: field "quotas"`, wantReason: plugins.ReasonInvalidSpec},
		{reason: "a refused value of the most shown bytes is shown whole", profile: profileWith(demo(`{"limits":{"cpu":"` + strings.Repeat("z", 62) + `"}}`)), wantErr: `field "limits[cpu]": "` + strings.Repeat("z", 62) + `" is not a quantity`, wantReason: plugins.ReasonInvalidSpec},
		{reason: "a longer refused value is cut", profile: profileWith(demo(`{"limits":{"cpu":"` + strings.Repeat("z", 63) + `"}}`)), wantErr: `field "limits[cpu]": "` + strings.Repeat("z", 63) + `... is not a quantity`, wantReason: plugins.ReasonInvalidSpec},
		{reason: "a value its type refuses is named by its path", profile: profileWith(demo(`{"limits":{"cpu":"lots"}}`)), wantErr: `spec.plugins[0] (demo).spec: field "limits[cpu]": "lots" is not a quantity`, wantReason: plugins.ReasonInvalidSpec},
		{reason: "deep nesting", profile: profileWith(demo(`{"nested":{"deep":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}}`)), wantErr: "spec.plugins[0] (demo).spec: nested too deeply", wantReason: plugins.ReasonInvalidSpec},
		{reason: "every unknown field is a line of its own", profile: profileWith(demo(`{"a":1,"b":2}`)), wantErr: "spec.plugins[0] (demo).spec: unknown field \"a\"\nspec.plugins[0] (demo).spec: unknown field \"b\"", wantReason: plugins.ReasonInvalidSpec},
		{reason: "bad host defaults are the host's fault", defaults: `{"colour":"red"}`, profile: profileWith(), wantErr: `plugin demo: host defaults: unknown field "colour"`, wantReason: plugins.ReasonInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got, err := testDefinition().Decode([]byte(tt.defaults), tt.profile)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Decode error = %v, want it to contain %q", err, tt.wantErr)
				}
				if !plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != tt.wantReason {
					t.Errorf("Decode error %v: terminal=%v reason=%q, want terminal %s", err, plugins.IsTerminal(err), plugins.ReasonOf(err, ""), tt.wantReason)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeWithoutConfig(t *testing.T) {
	def := plugins.Definition{Plugin: plugins.Funcs{KindName: "bare"}}
	p := profileWith(kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: "bare"}, Spec: &runtime.RawExtension{Raw: []byte(`{"x":1}`)}})
	if _, err := def.Decode(nil, p); err == nil || !strings.Contains(err.Error(), "spec.plugins[0] (bare).spec: plugin bare takes no spec") {
		t.Errorf("Decode error = %v, want a plugin that takes no spec to refuse one", err)
	}
	if _, err := def.Decode([]byte(`{"x":1}`), profileWith()); err == nil || !strings.Contains(err.Error(), "plugin bare: takes no config") || plugins.ReasonOf(err, "") != plugins.ReasonInvalidConfig {
		t.Errorf("Decode error = %v, want host defaults for a plugin that takes no config refused as InvalidConfig", err)
	}
	for _, defaults := range []string{"", " null "} {
		if cfg, err := def.Decode([]byte(defaults), profileWith()); err != nil || cfg != nil {
			t.Errorf("Decode with host defaults %q = %v, %v; want no config and no error", defaults, cfg, err)
		}
	}
}

// joined is an error that joins the errors it holds, none or more.
type joined []error

func (j joined) Error() string   { return fmt.Sprint([]error(j)) }
func (j joined) Unwrap() []error { return j }

func TestIsTerminal(t *testing.T) {
	term := plugins.Terminalf(plugins.ReasonInvalidLabel, "bad label")
	tests := []struct {
		reason string
		err    error
		want   bool
	}{
		{reason: "nil", err: nil, want: false},
		{reason: "a plain error", err: errors.New("timeout"), want: false},
		{reason: "a terminal error", err: term, want: true},
		{reason: "a wrapped terminal error", err: errors.Join(term), want: true},
		{reason: "terminal errors joined", err: errors.Join(term, plugins.Terminal(plugins.ReasonConflict, errors.New("taken"))), want: true},
		{reason: "one transient error makes a join retryable", err: errors.Join(term, errors.New("timeout")), want: false},
		{reason: "a join of nothing is retryable", err: joined{}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			if got := plugins.IsTerminal(tt.err); got != tt.want {
				t.Errorf("IsTerminal(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestResultSummary(t *testing.T) {
	var r plugins.Result
	if got := r.Summary(); got != "no objects" {
		t.Errorf("empty Summary = %q", got)
	}
	r.Add(plugins.Change{Kind: "ResourceQuota", Namespace: "a", Name: "q", Action: plugins.Unchanged})
	r.Add(plugins.Change{Kind: "LimitRange", Namespace: "a", Name: "l", Action: plugins.Created})
	r.Add(plugins.Change{Kind: "Role", Namespace: "a", Name: "r", Action: plugins.Deleted})
	if got, want := r.Summary(), "1 created, 1 unchanged, 1 deleted"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

func TestConditionTypeFor(t *testing.T) {
	for kind, want := range map[string]string{"quotas": "QuotasReady", "authpolicy": "AuthpolicyReady", "": "Ready"} {
		if got := plugins.ConditionTypeFor(kind); got != want {
			t.Errorf("ConditionTypeFor(%q) = %q, want %q", kind, got, want)
		}
	}
}
