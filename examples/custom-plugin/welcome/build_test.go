package welcome_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/custom-plugin/welcome"
	"github.com/profilekit/profilekit/plugins"
)

func profile(spec string) *kubeflowv1.Profile {
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice@example.org"}},
	}
	if spec != "" {
		p.Spec.Plugins = []kubeflowv1.Plugin{{TypeMeta: metav1.TypeMeta{Kind: welcome.Kind}, Spec: &runtime.RawExtension{Raw: []byte(spec)}}}
	}
	return p
}

// TestBuild decodes the config as a host does (built-in defaults, host
// defaults, the Profile's spec, Validate) and builds the ConfigMap.
func TestBuild(t *testing.T) {
	cases := []struct {
		reason   string
		defaults string
		spec     string
		wantName string
		wantData map[string]string
		wantErr  string
	}{
		{
			reason:   "the built-in message fills in the namespace and the owner",
			wantName: "welcome",
			wantData: map[string]string{"message": "Welcome to team-a, alice@example.org!"},
		},
		{
			reason:   "the host names the ConfigMap and sets a contact; the Profile its message",
			defaults: `{"name": "hello", "contact": "platform@example.org"}`,
			spec:     `{"message": "{{ .Profile }} is {{.Owner}}'s"}`,
			wantName: "hello",
			wantData: map[string]string{"message": "team-a is alice@example.org's", "contact": "platform@example.org"},
		},
		{
			reason:  "a Profile cannot set the host's fields",
			spec:    `{"name": "other"}`,
			wantErr: `InvalidSpec: spec.plugins[0] (welcome).spec: field "name" is set by the host only`,
		},
		{
			reason:  "an unknown placeholder is refused when decoded",
			spec:    `{"message": "hi {{ .Group }}"}`,
			wantErr: `InvalidSpec: spec.plugins[0] (welcome).spec: message "hi {{ .Group }}": unknown placeholder {{ .Group }}, want one of {{ .Namespace }}, {{ .Profile }}, {{ .Owner }}`,
		},
		{
			reason:  "an empty message is refused",
			spec:    `{"message": " "}`,
			wantErr: `InvalidSpec: spec.plugins[0] (welcome).spec: message is empty`,
		},
		{
			reason:   "the length counts the filled-in placeholders",
			defaults: `{"maxLength": 19}`,
			spec:     `{"message": "Hi {{ .Owner }}"}`,
			wantErr:  `InvalidSpec: message is 20 bytes with its placeholders filled in, above maxLength 19`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			p := profile(tc.spec)
			var gotName string
			var gotData map[string]string
			cfg, err := welcome.Definition().Decode([]byte(tc.defaults), p)
			if err == nil {
				cm, berr := welcome.Build(cfg.(*welcome.Config), p)
				err = berr
				if cm != nil {
					gotName, gotData = *cm.Name, cm.Data
					if *cm.Namespace != "team-a" {
						t.Errorf("namespace = %s, want the Profile's", *cm.Namespace)
					}
				}
			}
			gotErr := ""
			if err != nil {
				gotErr = plugins.FailureMessage(err, plugins.ReasonApplyFailed)
				if !plugins.IsTerminal(err) {
					t.Errorf("error %v is not terminal", err)
				}
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if gotName != tc.wantName {
				t.Errorf("name = %q, want %q", gotName, tc.wantName)
			}
			if diff := cmp.Diff(tc.wantData, gotData); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHostDefaults: defaults a host cannot run with are an InvalidConfig
// error that names every problem, which stops the host before it starts.
func TestHostDefaults(t *testing.T) {
	_, err := welcome.Definition().DecodeHostDefaults([]byte(`{"name": "kf-resource-quota", "maxLength": 0}`))
	want := `InvalidConfig: plugin welcome: host defaults: name "kf-resource-quota" belongs to the upstream profile controller` + "\n" +
		`maxLength 0: want a positive number of bytes`
	if diff := cmp.Diff(want, plugins.FailureMessage(err, plugins.ReasonApplyFailed)); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}
