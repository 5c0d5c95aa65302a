package quotas_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/quotas"
)

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestHard(t *testing.T) {
	base := func() *quotas.Config {
		c := quotas.NewConfig()
		c.LabelPrefix = "quotas.example.org"
		c.Hard = list("requests.cpu", "2", "limits.cpu", "4", "requests.memory", "8Gi")
		c.Caps = list("limits.cpu", "16", "requests.nvidia.com/gpu", "2")
		return c
	}
	tests := []struct {
		reason  string
		labels  map[string]string
		want    corev1.ResourceList
		wantErr []string
	}{
		{reason: "no labels: the config's limits", want: list("requests.cpu", "2", "limits.cpu", "4", "requests.memory", "8Gi")},
		{
			reason: "a label overrides one resource",
			labels: map[string]string{"quotas.example.org/limits.cpu": "8"},
			want:   list("requests.cpu", "2", "limits.cpu", "8", "requests.memory", "8Gi"),
		},
		{
			reason: "an alias stands for a resource a label key cannot hold",
			labels: map[string]string{"quotas.example.org/gpu": "1"},
			want:   list("requests.cpu", "2", "limits.cpu", "4", "requests.memory", "8Gi", "requests.nvidia.com/gpu", "1"),
		},
		{
			reason: "labels under other prefixes are ignored",
			labels: map[string]string{"quotas.other.org/limits.cpu": "lots", "team": "a"},
			want:   list("requests.cpu", "2", "limits.cpu", "4", "requests.memory", "8Gi"),
		},
		{
			reason: "a value at its bound is allowed: at the cap, a request at its limit, zero",
			labels: map[string]string{"quotas.example.org/limits.cpu": "16", "quotas.example.org/requests.cpu": "16", "quotas.example.org/gpu": "0"},
			want:   list("requests.cpu", "16", "limits.cpu", "16", "requests.memory", "8Gi", "requests.nvidia.com/gpu", "0"),
		},
		{
			reason:  "a bare cpu, memory or ephemeral-storage is a request, bounded by its limit",
			labels:  map[string]string{"quotas.example.org/cpu": "5", "quotas.example.org/memory": "1Gi", "quotas.example.org/limits.memory": "512Mi", "quotas.example.org/ephemeral-storage": "2Gi", "quotas.example.org/limits.ephemeral-storage": "1Gi"},
			wantErr: []string{"cpu 5 is above limits.cpu 4", "memory 1Gi is above limits.memory 512Mi", "ephemeral-storage 2Gi is above limits.ephemeral-storage 1Gi"},
		},
		{reason: "not a quantity", labels: map[string]string{"quotas.example.org/limits.cpu": "lots"}, wantErr: []string{`label quotas.example.org/limits.cpu="lots": not a quantity`}},
		{reason: "above the cap", labels: map[string]string{"quotas.example.org/gpu": "3"}, wantErr: []string{`label quotas.example.org/gpu="3": requests.nvidia.com/gpu 3 is above the cap 2`}},
		{reason: "a label for a resource a quota cannot limit", labels: map[string]string{"quotas.example.org/storage": "1Gi"}, wantErr: []string{`label quotas.example.org/storage="1Gi": storage: not a resource a quota can limit`}},
		{reason: "requests above limits", labels: map[string]string{"quotas.example.org/requests.cpu": "6"}, wantErr: []string{`label quotas.example.org/requests.cpu="6": requests.cpu 6 is above limits.cpu 4 (hard[limits.cpu])`}},
		{
			reason:  "every problem is reported at once",
			labels:  map[string]string{"quotas.example.org/limits.cpu": "32", "quotas.example.org/requests.memory": "x"},
			wantErr: []string{"limits.cpu 32 is above the cap 16", `requests.memory="x": not a quantity`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: tt.labels}}
			got, err := quotas.Hard(base(), p)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Hard = %v, want an error", got)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				if plugins.ReasonOf(err, "") != plugins.ReasonInvalidLabel || !plugins.IsTerminal(err) {
					t.Errorf("error %v is not a terminal InvalidLabel error", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Hard: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("hard (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		reason  string
		mutate  func(*quotas.Config)
		wantErr string
	}{
		{reason: "built-in defaults are valid", mutate: func(*quotas.Config) {}},
		{reason: "upstream's name is refused", mutate: func(c *quotas.Config) { c.Name = "kf-resource-quota" }, wantErr: "belongs to the upstream profile controller"},
		{reason: "a zero cap is not negative", mutate: func(c *quotas.Config) { c.Hard = list("pods", "0"); c.Caps = list("pods", "0") }},
		{reason: "a negative cap", mutate: func(c *quotas.Config) { c.Caps = list("pods", "-1") }, wantErr: "caps[pods]=-1 is negative"},
		{reason: "a hard limit above its cap", mutate: func(c *quotas.Config) { c.Hard = list("pods", "20"); c.Caps = list("pods", "10") }, wantErr: "hard[pods]: pods 20 is above the cap 10"},
		{reason: "an alias with a slash", mutate: func(c *quotas.Config) { c.Aliases["a/b"] = "x" }, wantErr: "aliases[a/b]"},
		{reason: "a hard key that is not a resource name", mutate: func(c *quotas.Config) { c.Hard = list("bad_name!", "1") }, wantErr: "hard[bad_name!]: not a resource name"},
		{reason: "a hard key without a domain that quotas do not know", mutate: func(c *quotas.Config) { c.Hard = list("storage", "1Gi") }, wantErr: "hard[storage]: not a resource a quota can limit"},
		{reason: "names with a domain, counts and huge pages are taken", mutate: func(c *quotas.Config) {
			c.Hard = list("requests.nvidia.com/gpu", "1", "count/deployments.apps", "3", "hugepages-2Mi", "1Gi", "requests.storage", "1Ti")
		}},
		{reason: "a count that is not a whole number", mutate: func(c *quotas.Config) { c.Hard = list("pods", "1500m") }, wantErr: "hard[pods]: pods 1500m is not a whole number"},
		{reason: "a bad label prefix", mutate: func(c *quotas.Config) { c.LabelPrefix = "Not_A_Domain" }, wantErr: `labelPrefix "Not_A_Domain"`},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			c := quotas.NewConfig()
			tt.mutate(c)
			err := c.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}
