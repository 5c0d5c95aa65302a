package limitrange_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/limitrange"
)

func profile(spec string) *kubeflowv1.Profile {
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	if spec != "" {
		p.Spec.Plugins = []kubeflowv1.Plugin{{TypeMeta: metav1.TypeMeta{Kind: limitrange.Kind}, Spec: &runtime.RawExtension{Raw: []byte(spec)}}}
	}
	return p
}

func TestDecode(t *testing.T) {
	hostDefaults := `{"container":{"default":{"cpu":"1","memory":"1Gi"},"defaultRequest":{"cpu":"100m","memory":"256Mi"},"max":{"cpu":"8"}}}`
	tests := []struct {
		reason  string
		spec    string
		want    limitrange.Limits
		wantErr string
	}{
		{
			reason: "host defaults alone",
			want: limitrange.Limits{
				Default:        corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")},
				DefaultRequest: corev1.ResourceList{"cpu": resource.MustParse("100m"), "memory": resource.MustParse("256Mi")},
				Max:            corev1.ResourceList{"cpu": resource.MustParse("8")},
			},
		},
		{
			reason: "the Profile overrides one resource and keeps the others",
			spec:   `{"container":{"default":{"memory":"4Gi"}}}`,
			want: limitrange.Limits{
				Default:        corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("4Gi")},
				DefaultRequest: corev1.ResourceList{"cpu": resource.MustParse("100m"), "memory": resource.MustParse("256Mi")},
				Max:            corev1.ResourceList{"cpu": resource.MustParse("8")},
			},
		},
		{
			reason: "a value at its bound is allowed: default at max, the ratio at its maximum, a zero minimum",
			spec:   `{"container":{"default":{"cpu":"8"},"defaultRequest":{"cpu":"800m"},"min":{"memory":"0"},"maxLimitRequestRatio":{"cpu":"10"}}}`,
			want: limitrange.Limits{
				Default:              corev1.ResourceList{"cpu": resource.MustParse("8"), "memory": resource.MustParse("1Gi")},
				DefaultRequest:       corev1.ResourceList{"cpu": resource.MustParse("800m"), "memory": resource.MustParse("256Mi")},
				Min:                  corev1.ResourceList{"memory": resource.MustParse("0")},
				Max:                  corev1.ResourceList{"cpu": resource.MustParse("8")},
				MaxLimitRequestRatio: corev1.ResourceList{"cpu": resource.MustParse("10")},
			},
		},
		{reason: "default above max", spec: `{"container":{"default":{"cpu":"16"}}}`, wantErr: "container.default[cpu]=16 is above container.max[cpu]=8"},
		{reason: "defaultRequest above default", spec: `{"container":{"defaultRequest":{"memory":"2Gi"}}}`, wantErr: "container.defaultRequest[memory]=2Gi is above container.default[memory]=1Gi"},
		{reason: "min above max", spec: `{"container":{"min":{"cpu":"9"}}}`, wantErr: "container.min[cpu]=9 is above container.max[cpu]=8"},
		{reason: "ratio exceeded", spec: `{"container":{"maxLimitRequestRatio":{"cpu":"4"}}}`, wantErr: "exceeds container.maxLimitRequestRatio[cpu]=4"},
		{reason: "unknown field names the plugin and the field", spec: `{"container":{"defaults":{}}}`, wantErr: `spec.plugins[0] (limitrange).spec: unknown field "container.defaults"`},
		{reason: "the name is the host's", spec: `{"name":"mine"}`, wantErr: `field "name" is set by the host only`},
		{reason: "not a quantity", spec: `{"container":{"max":{"cpu":"lots"}}}`, wantErr: `spec.plugins[0] (limitrange).spec: field "container.max[cpu]": "lots" is not a quantity`},
	}
	def := limitrange.Definition()
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			cfg, err := def.Decode([]byte(hostDefaults), profile(tt.spec))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Decode error = %v, want it to contain %q", err, tt.wantErr)
				}
				if !plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != plugins.ReasonInvalidSpec {
					t.Errorf("Decode error %v is not a terminal InvalidSpec error", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			got := cfg.(*limitrange.Config).Container
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("limits (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	tests := []struct {
		reason string
		cfg    limitrange.Config
		want   *corev1ac.LimitRangeApplyConfiguration
	}{
		{reason: "no limits, no object", cfg: limitrange.Config{Name: "lr"}},
		{
			reason: "only the fields that are set",
			cfg:    limitrange.Config{Name: "lr", Container: limitrange.Limits{Max: corev1.ResourceList{"cpu": resource.MustParse("2")}}},
			want: corev1ac.LimitRange("lr", "team-a").WithSpec(corev1ac.LimitRangeSpec().WithLimits(
				corev1ac.LimitRangeItem().WithType(corev1.LimitTypeContainer).WithMax(corev1.ResourceList{"cpu": resource.MustParse("2")}))),
		},
		{
			reason: "a default alone sets no maximum",
			cfg:    limitrange.Config{Name: "lr", Container: limitrange.Limits{Default: corev1.ResourceList{"cpu": resource.MustParse("1")}}},
			want: corev1ac.LimitRange("lr", "team-a").WithSpec(corev1ac.LimitRangeSpec().WithLimits(
				corev1ac.LimitRangeItem().WithType(corev1.LimitTypeContainer).WithDefault(corev1.ResourceList{"cpu": resource.MustParse("1")}))),
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got := limitrange.Build(&tt.cfg, profile(""))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Build (-want +got):\n%s", diff)
			}
		})
	}
}
