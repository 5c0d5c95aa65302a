package notebook_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/yaml"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/notebook"
)

// hostDefaults reads a testdata YAML file as the JSON a host passes on.
func hostDefaults(t *testing.T, file string) []byte {
	t.Helper()
	y, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return j
}

func hostConfig(t *testing.T, file string) *notebook.Config {
	t.Helper()
	cfg, err := notebook.Definition().DecodeHostDefaults(hostDefaults(t, file))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return cfg.(*notebook.Config)
}

func profile(name string, labels map[string]string) *kubeflowv1.Profile {
	return &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func podDefault(ns, name string, spec notebook.PodDefaultSpec) *notebook.PodDefaultApplyConfiguration {
	pd := &notebook.PodDefaultApplyConfiguration{
		ObjectMetaApplyConfiguration: metav1ac.ObjectMeta().WithName(name).WithNamespace(ns),
		Spec:                         &spec,
	}
	pd.WithAPIVersion("kubeflow.org/v1alpha1").WithKind("PodDefault")
	return pd
}

var protectedB = notebook.PodDefaultSpec{
	Selector: metav1.LabelSelector{MatchLabels: map[string]string{"notebook.statcan.gc.ca/protected-b": "true"}},
	Desc:     "Run with Protected B data",
	Labels:   map[string]string{"data.statcan.gc.ca/classification": "protected-b"},
}

func TestBuild(t *testing.T) {
	minimal := func(name string, profileSelector map[string]string) notebook.PodDefault {
		d := notebook.PodDefault{Name: name, PodDefaultSpec: notebook.PodDefaultSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"opt/" + name: "true"}},
		}}
		if profileSelector != nil {
			d.ProfileSelector = &metav1.LabelSelector{MatchLabels: profileSelector}
		}
		return d
	}
	spec := func(name string) notebook.PodDefaultSpec { return minimal(name, nil).PodDefaultSpec }
	tests := []struct {
		reason string
		cfg    *notebook.Config
		p      *kubeflowv1.Profile
		want   []*notebook.PodDefaultApplyConfiguration
	}{{
		reason: "no configuration, no PodDefaults",
		cfg:    &notebook.Config{},
		p:      profile("team-a", nil),
	}, {
		reason: "the StatCan-style example gives the protected-b option, as configured",
		cfg:    hostConfig(t, "statcan.yaml"),
		p:      profile("team-a", nil),
		want:   []*notebook.PodDefaultApplyConfiguration{podDefault("team-a", "protected-b", protectedB)},
	}, {
		reason: "a PodDefault with a profileSelector is left out where the Profile's labels do not match",
		cfg:    &notebook.Config{PodDefaults: []notebook.PodDefault{minimal("gpu", map[string]string{"gpu": "on"}), minimal("base", nil)}},
		p:      profile("team-a", map[string]string{"gpu": "off"}),
		want:   []*notebook.PodDefaultApplyConfiguration{podDefault("team-a", "base", spec("base"))},
	}, {
		reason: "where they match it is written; PodDefaults come in name order whatever the config's order",
		cfg:    &notebook.Config{PodDefaults: []notebook.PodDefault{minimal("gpu", map[string]string{"gpu": "on"}), minimal("base", nil)}},
		p:      profile("team-a", map[string]string{"gpu": "on"}),
		want: []*notebook.PodDefaultApplyConfiguration{
			podDefault("team-a", "base", spec("base")),
			podDefault("team-a", "gpu", spec("gpu")),
		},
	}}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := notebook.Build(tc.cfg, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PodDefaults (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWireFormat pins the JSON the API server receives to the published
// PodDefault field names.
func TestWireFormat(t *testing.T) {
	tests := []struct {
		reason string
		file   string
		p      *kubeflowv1.Profile
		want   string
	}{{
		reason: "the protected-b option",
		file:   "statcan.yaml",
		p:      profile("team-a", nil),
		want: `[{"apiVersion":"kubeflow.org/v1alpha1","kind":"PodDefault",
		  "metadata":{"name":"protected-b","namespace":"team-a"},
		  "spec":{"selector":{"matchLabels":{"notebook.statcan.gc.ca/protected-b":"true"}},
		    "desc":"Run with Protected B data",
		    "labels":{"data.statcan.gc.ca/classification":"protected-b"}}}]`,
	}, {
		reason: "every field, and the profileSelector stays out of the object",
		file:   "gated.yaml",
		p:      profile("team-a", map[string]string{"gpu.example.org/enabled": "true"}),
		want: `[{"apiVersion":"kubeflow.org/v1alpha1","kind":"PodDefault",
		  "metadata":{"name":"gpu-scratch","namespace":"team-a"},
		  "spec":{
		    "selector":{"matchExpressions":[{"key":"notebook.example.org/gpu","operator":"In","values":["true","yes"]}]},
		    "desc":"GPU node with a scratch volume",
		    "serviceAccountName":"gpu-runner",
		    "automountServiceAccountToken":false,
		    "env":[{"name":"SCRATCH","value":"/scratch"},{"name":"POD_NAME","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}],
		    "envFrom":[{"prefix":"GPU_","configMapRef":{"name":"gpu-settings"}}],
		    "volumes":[{"name":"scratch","emptyDir":{"sizeLimit":"10Gi"}},{"name":"settings","configMap":{"name":"gpu-settings","defaultMode":420}},{"name":"cache","emptyDir":{}}],
		    "volumeMounts":[{"name":"scratch","mountPath":"/scratch"},{"name":"settings","readOnly":true,"mountPath":"/etc/gpu"}],
		    "annotations":{"example.org/scratch":"/scratch"},
		    "labels":{"example.org/gpu":"true"},
		    "tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"},
		      {"key":"node.example.org/maintenance","operator":"Equal","value":"soon","effect":"NoExecute","tolerationSeconds":300}]}}]`,
	}}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			pds, err := notebook.Build(hostConfig(t, tc.file), tc.p)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			raw, err := json.Marshal(pds)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatalf("want: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("JSON (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := notebook.PodDefault{Name: "opt", PodDefaultSpec: notebook.PodDefaultSpec{
		Selector: metav1.LabelSelector{MatchLabels: map[string]string{"opt": "true"}},
	}}
	with := func(f func(*notebook.PodDefault)) notebook.Config {
		d := ok
		f(&d)
		return notebook.Config{PodDefaults: []notebook.PodDefault{d}}
	}
	tests := []struct {
		reason  string
		cfg     notebook.Config
		wantErr string
	}{{
		reason: "a PodDefault with a name and a selector is valid",
		cfg:    with(func(*notebook.PodDefault) {}),
	}, {
		reason:  "names are unique",
		cfg:     notebook.Config{PodDefaults: []notebook.PodDefault{ok, ok}},
		wantErr: `podDefaults[1]: name "opt" is also used by podDefaults[0]`,
	}, {
		reason:  "a name is a DNS subdomain",
		cfg:     with(func(d *notebook.PodDefault) { d.Name = "Protected_B" }),
		wantErr: `podDefaults[0]: name "Protected_B"`,
	}, {
		reason:  "an empty selector would catch every pod",
		cfg:     with(func(d *notebook.PodDefault) { d.Selector = metav1.LabelSelector{} }),
		wantErr: "podDefaults[0]: selector is empty",
	}, {
		reason: "an invalid selector operator is refused",
		cfg: with(func(d *notebook.PodDefault) {
			d.Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}
		}),
		wantErr: "podDefaults[0]: selector",
	}, {
		reason: "an invalid profileSelector is refused",
		cfg: with(func(d *notebook.PodDefault) {
			d.ProfileSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b c"}}
		}),
		wantErr: "podDefaults[0]: profileSelector",
	}, {
		reason: "a label value that no pod can carry is refused",
		cfg: with(func(d *notebook.PodDefault) {
			d.Labels = map[string]string{"data.example.org/classification": "protected b"}
		}),
		wantErr: `labels[data.example.org/classification]: value "protected b"`,
	}, {
		reason:  "an annotation key must be a qualified name",
		cfg:     with(func(d *notebook.PodDefault) { d.Annotations = map[string]string{"not a key": "x"} }),
		wantErr: `annotations: key "not a key"`,
	}, {
		reason:  "two volumes of one name are refused",
		cfg:     with(func(d *notebook.PodDefault) { d.Volumes = []corev1.Volume{{Name: "v"}, {Name: "v"}} }),
		wantErr: `volumes[1]: name "v" is used twice`,
	}, {
		reason:  "a mount needs a path",
		cfg:     with(func(d *notebook.PodDefault) { d.VolumeMounts = []corev1.VolumeMount{{Name: "v"}} }),
		wantErr: "volumeMounts[0]: needs a name and a mountPath",
	}, {
		reason: "an Exists toleration takes no value",
		cfg: with(func(d *notebook.PodDefault) {
			d.Tolerations = []corev1.Toleration{{Key: "k", Operator: "Exists", Value: "v"}}
		}),
		wantErr: "tolerations[0]: operator Exists takes no value",
	}, {
		reason:  "upstream's names are refused",
		cfg:     with(func(d *notebook.PodDefault) { d.Name = "default-editor" }),
		wantErr: "belongs to the upstream profile controller",
	}}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		reason     string
		defaults   string
		spec       string
		wantErr    string
		wantReason string
	}{{
		reason:   "a Profile that lists the plugin without a spec gets the host's PodDefaults",
		defaults: `{"podDefaults":[{"name":"opt","selector":{"matchLabels":{"opt":"true"}}}]}`,
	}, {
		reason:     "a Profile may not choose PodDefaults",
		spec:       `{"podDefaults":[{"name":"mine","selector":{"matchLabels":{"a":"b"}}}]}`,
		wantErr:    `field "podDefaults" is set by the host only`,
		wantReason: plugins.ReasonInvalidSpec,
	}, {
		reason:     "an unknown field in the host's defaults is an error naming it",
		defaults:   `{"podDefaults":[{"name":"opt","selector":{"matchLabels":{"opt":"true"}},"sidecar":{}}]}`,
		wantErr:    "sidecar",
		wantReason: plugins.ReasonInvalidConfig,
	}}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			p := profile("team-a", nil)
			pl := kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: notebook.Kind}}
			if tc.spec != "" {
				pl.Spec = &runtime.RawExtension{Raw: []byte(tc.spec)}
			}
			p.Spec.Plugins = []kubeflowv1.Plugin{pl}
			cfg, err := notebook.Definition().Decode([]byte(tc.defaults), p)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if n := len(cfg.(*notebook.Config).PodDefaults); n != 1 {
					t.Errorf("%d PodDefaults, want the host's one", n)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
			if got := plugins.ReasonOf(err, ""); got != tc.wantReason {
				t.Errorf("reason = %q, want %s", got, tc.wantReason)
			}
		})
	}
}
