package expose_test

// This file holds the tests of the configuration: from the environment
// and as decoded from a Profile's plugin spec.

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/expose"
)

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		reason string
		env    map[string]string
		want   *expose.Config
	}{
		{
			reason: "nothing set gives the built-in defaults",
			want:   &expose.Config{Gateways: []string{"kubeflow/kubeflow-gateway"}, Hosts: []string{"*"}, ClusterDomain: "cluster.local"},
		},
		{
			reason: "every variable is read; lists are comma-separated and trimmed",
			env:    map[string]string{"ISTIO_GATEWAY": "gw/a, gw/b", "ISTIO_HOSTS": "a.example.org,b.example.org", "CLUSTER_DOMAIN": "corp.internal"},
			want:   &expose.Config{Gateways: []string{"gw/a", "gw/b"}, Hosts: []string{"a.example.org", "b.example.org"}, ClusterDomain: "corp.internal"},
		},
		{
			reason: "ISTIO_HOST is the fallback name for ISTIO_HOSTS",
			env:    map[string]string{"ISTIO_HOST": "kf.example.org"},
			want:   &expose.Config{Gateways: []string{"kubeflow/kubeflow-gateway"}, Hosts: []string{"kf.example.org"}, ClusterDomain: "cluster.local"},
		},
		{
			reason: "ISTIO_HOSTS wins over ISTIO_HOST",
			env:    map[string]string{"ISTIO_HOST": "old.example.org", "ISTIO_HOSTS": "new.example.org"},
			want:   &expose.Config{Gateways: []string{"kubeflow/kubeflow-gateway"}, Hosts: []string{"new.example.org"}, ClusterDomain: "cluster.local"},
		},
		{
			reason: "empty variables count as unset",
			env:    map[string]string{"ISTIO_GATEWAY": " ", "ISTIO_HOSTS": ",", "CLUSTER_DOMAIN": ""},
			want:   &expose.Config{Gateways: []string{"kubeflow/kubeflow-gateway"}, Hosts: []string{"*"}, ClusterDomain: "cluster.local"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got := expose.ConfigFromEnv(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	env := func(k string) (string, bool) {
		return map[string]string{"ISTIO_GATEWAY": "env/gw", "ISTIO_HOSTS": "env.example.org"}[k], true
	}
	def := expose.DefinitionFromEnv(env)
	spec := func(s string) kubeflowv1.Plugin {
		return kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: expose.Kind}, Spec: &runtime.RawExtension{Raw: []byte(s)}}
	}
	tests := []struct {
		reason   string
		defaults string
		spec     string
		want     *expose.Config
		wantErr  string
	}{
		{
			reason: "the environment supplies defaults",
			spec:   `{"apps":[{"name":"a","service":"a","port":80}]}`,
			want: &expose.Config{Gateways: []string{"env/gw"}, Hosts: []string{"env.example.org"}, ClusterDomain: "cluster.local",
				Apps: []expose.App{{Name: "a", Service: "a", Port: 80}}},
		},
		{
			reason:   "host config wins over the environment",
			defaults: `{"gateways":["cfg/gw"],"clusterDomain":"corp.internal"}`,
			want:     &expose.Config{Gateways: []string{"cfg/gw"}, Hosts: []string{"env.example.org"}, ClusterDomain: "corp.internal"},
		},
		{
			reason:   "the mesh gateway and the highest port",
			defaults: `{"gateways":["mesh","cfg/gw"]}`,
			spec:     `{"apps":[{"name":"a","service":"a","port":65535}]}`,
			want: &expose.Config{Gateways: []string{"mesh", "cfg/gw"}, Hosts: []string{"env.example.org"}, ClusterDomain: "cluster.local",
				Apps: []expose.App{{Name: "a", Service: "a", Port: 65535}}},
		},
		{
			reason:   "a gateway that is neither the mesh nor namespace/name",
			defaults: `{"gateways":["gw"]}`,
			wantErr:  "want <namespace>/<name>",
		},
		{
			reason: "header names of every letter and digit range's ends",
			spec:   `{"apps":[{"name":"a","service":"a","port":80,"requestHeaders":{"remove":["X-az09AZ","z9Z0"]}}]}`,
			want: &expose.Config{Gateways: []string{"env/gw"}, Hosts: []string{"env.example.org"}, ClusterDomain: "cluster.local",
				Apps: []expose.App{{Name: "a", Service: "a", Port: 80, RequestHeaders: &expose.HeaderOperations{Remove: []string{"X-az09AZ", "z9Z0"}}}}},
		},
		{
			reason:  "a header name with a character just past the digits",
			spec:    `{"apps":[{"name":"a","service":"a","port":80,"requestHeaders":{"remove":["X:y"]}}]}`,
			wantErr: `remove: "X:y" is not a valid header name`,
		},
		{
			reason:  "a port over the highest",
			spec:    `{"apps":[{"name":"a","service":"a","port":65536}]}`,
			wantErr: `port 65536 is not between 1 and 65535`,
		},
		{
			reason:  "a Profile may not choose the gateways",
			spec:    `{"gateways":["mine/gw"]}`,
			wantErr: `field "gateways" is set by the host only`,
		},
		{
			reason:  "an unknown field is an error",
			spec:    `{"apps":[{"name":"a","service":"a","port":80,"rewrite":true}]}`,
			wantErr: `unknown field "apps[0].rewrite"`,
		},
		{
			reason:  "a broken template in the spec fails decoding, naming the app and header",
			spec:    `{"apps":[{"name":"a","service":"a","port":80,"requestHeaders":{"set":{"X-A":"{{ httpPathPrefix \"a\" "}}}]}`,
			wantErr: `apps[a]: requestHeaders: parse header template`,
		},
		{
			reason:  "invalid names, ports and header names are all reported",
			spec:    `{"apps":[{"name":"A_b","service":"","port":0,"requestHeaders":{"remove":["bad header"]}}]}`,
			wantErr: `port 0 is not between 1 and 65535`,
		},
		{
			reason:  "two apps may not share a prefix",
			spec:    `{"apps":[{"name":"a","service":"a","port":80},{"name":"b","prefix":"a","service":"b","port":80}]}`,
			wantErr: `apps[b]: prefix "a" is used twice`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			var ps []kubeflowv1.Plugin
			if tt.spec != "" {
				ps = append(ps, spec(tt.spec))
			}
			got, err := def.Decode([]byte(tt.defaults), profile("team-a", ps...))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if !plugins.IsTerminal(err) {
					t.Errorf("error %v is not terminal", err)
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

func TestDecodeReportsEveryProblemOfAnApp(t *testing.T) {
	_, err := expose.Definition().Decode(nil, profile("team-a", kubeflowv1.Plugin{
		TypeMeta: metav1.TypeMeta{Kind: expose.Kind},
		Spec:     &runtime.RawExtension{Raw: []byte(`{"apps":[{"name":"A_b","service":"","port":0,"requestHeaders":{"remove":["bad header"]}}]}`)},
	}))
	for _, part := range []string{`name "A_b"`, `service ""`, `port 0`, `remove: "bad header" is not a valid header name`} {
		if err == nil || !strings.Contains(err.Error(), part) {
			t.Errorf("error %v does not contain %q", err, part)
		}
	}
}
