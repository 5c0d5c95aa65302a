package namespacemeta_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/namespacemeta"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		reason  string
		allow   namespacemeta.Allow
		wantErr []string
	}{
		{reason: "the doc's allowlist", allow: hostAllow},
		{reason: "nothing allowed", allow: namespacemeta.Allow{}},
		{
			reason: "a subdomain of kubernetes.io may be listed, by key or prefix",
			allow:  namespacemeta.Allow{Labels: []namespacemeta.Rule{{Key: "pod-security.kubernetes.io/*"}, {Key: "app.kubernetes.io/part-of"}}},
		},
		{
			reason: "invalid keys and prefixes",
			allow: namespacemeta.Allow{
				Labels:      []namespacemeta.Rule{{Key: "bad key"}, {Key: "Not_A_Domain/*"}, {Key: "*"}},
				Annotations: []namespacemeta.Rule{{Key: "example.org/a/b"}},
			},
			wantErr: []string{
				"allow.labels[0] (bad key): not a valid label key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
				`allow.labels[1] (Not_A_Domain/*): prefix "Not_A_Domain": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
				"allow.labels[2] (*): not a valid label key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
				"allow.annotations[0] (example.org/a/b): not a valid annotation key: a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
			},
		},
		{
			reason:  "a key listed twice",
			allow:   namespacemeta.Allow{Labels: []namespacemeta.Rule{{Key: "istio.io/rev"}, {Key: "istio.io/rev", Values: "canary"}}},
			wantErr: []string{"allow.labels[1] (istio.io/rev): listed more than once"},
		},
		{
			reason:  "a pattern that does not compile",
			allow:   namespacemeta.Allow{Annotations: []namespacemeta.Rule{{Key: "example.org/*", Values: "(a"}}},
			wantErr: []string{"allow.annotations[0] (example.org/*): values: error parsing regexp: missing closing ): `^(?:(a)$`"},
		},
		{
			reason: "keys and prefixes that are always refused",
			allow: namespacemeta.Allow{
				Labels: []namespacemeta.Rule{
					{Key: "kubernetes.io/metadata.name"}, {Key: "k8s.io/*"}, {Key: "istio-injection"},
					{Key: plugins.LabelManagedBy}, {Key: "profilekit.dev/*"}, {Key: "quotas.profilekit.dev/*"},
				},
				Annotations: []namespacemeta.Rule{{Key: "owner"}, {Key: "kubernetes.io/*"}},
			},
			wantErr: []string{
				"allow.labels[0] (kubernetes.io/metadata.name): the kubernetes.io prefix is Kubernetes' own, never allowed",
				"allow.labels[1] (k8s.io/*): the k8s.io prefix is Kubernetes' own, never allowed",
				"allow.labels[2] (istio-injection): the core plugin's mesh label, never allowed",
				"allow.labels[3] (app.kubernetes.io/managed-by): profilekit's ownership label, never allowed",
				"allow.labels[4] (profilekit.dev/*): the profilekit.dev domain is profilekit's own, never allowed",
				"allow.labels[5] (quotas.profilekit.dev/*): the profilekit.dev domain is profilekit's own, never allowed",
				"allow.annotations[0] (owner): the owner annotation that Kubeflow reads, never allowed",
				"allow.annotations[1] (kubernetes.io/*): the kubernetes.io prefix is Kubernetes' own, never allowed",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			cfg := namespacemeta.NewConfig()
			cfg.Allow = tt.allow
			var got []string
			if err := cfg.Validate(); err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tt.wantErr, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

// A Profile's spec is decoded strictly over the host's defaults: it adds
// labels to the host's, may not widen the allowlist or name the labels
// file, and an unknown field is refused.
func TestDecode(t *testing.T) {
	def := namespacemeta.Definition()
	defaults := []byte(`{"labels":{"example.org/platform":"kubeflow"},"allow":{"labels":[{"key":"example.org/*"}]},"namespaceLabelsPath":"/etc/labels.yaml"}`)
	tests := []struct {
		reason  string
		spec    string
		want    *namespacemeta.Config
		wantErr string
	}{
		{
			reason: "labels and annotations over the host's",
			spec:   `{"labels":{"example.org/cost-centre":"cc-1"},"annotations":{"example.org/note":"hi"}}`,
			want: &namespacemeta.Config{
				Labels:              map[string]string{"example.org/platform": "kubeflow", "example.org/cost-centre": "cc-1"},
				Annotations:         map[string]string{"example.org/note": "hi"},
				Allow:               namespacemeta.Allow{Labels: []namespacemeta.Rule{{Key: "example.org/*"}}},
				NamespaceLabelsPath: "/etc/labels.yaml",
			},
		},
		{reason: "the allowlist is the host's", spec: `{"allow":{"labels":[{"key":"kubernetes.io/*"}]}}`, wantErr: `"allow"`},
		{reason: "the labels file is the host's", spec: `{"namespaceLabelsPath":"/dev/null"}`, wantErr: `"namespaceLabelsPath"`},
		{reason: "an unknown field", spec: `{"label":{"a":"b"}}`, wantErr: `unknown field "label"`},
		{reason: "a value of the wrong type", spec: `{"labels":{"a":1}}`, wantErr: "labels"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			p := &kubeflowv1.Profile{Spec: kubeflowv1.ProfileSpec{Plugins: []kubeflowv1.Plugin{{
				TypeMeta: metav1.TypeMeta{Kind: namespacemeta.Kind}, Spec: &runtime.RawExtension{Raw: []byte(tt.spec)},
			}}}}
			got, err := def.Decode(defaults, p)
			if tt.wantErr != "" {
				if err == nil || !plugins.IsTerminal(err) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Decode = %v, want a terminal error naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}
