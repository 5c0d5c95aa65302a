package budgets_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/plugins/budgets"
)

// TestConfigValidate decodes host configurations through the Definition, as
// a host does, and checks the message of every problem.
func TestConfigValidate(t *testing.T) {
	tests := []struct {
		reason, yaml string
		// want lists fragments of the error, each on its own line; none
		// means valid.
		want []string
	}{
		{
			reason: "a lab sharing GPUs is valid",
			yaml:   `{budgets: [{name: lab, profileSelector: {matchLabels: {lab: vision}}, hard: {requests.nvidia.com/gpu: "16", requests.cpu: "64"}}]}`,
		},
		{
			reason: "doc.go's lab of 20 Profiles sharing 16 GPUs is valid",
			yaml: `
budgets:
- name: vision-lab
  profileSelector:
    matchLabels: {lab: vision}
  hard:
    requests.nvidia.com/gpu: "16"
    requests.cpu: "128"
    requests.memory: 1Ti
    count/pods: "400"
  grant:
    requests.nvidia.com/gpu: "2"
    requests.cpu: "16"
    requests.memory: 128Gi
`,
		},
		{
			reason: "a limit of zero is a limit: none of it for the team",
			yaml:   `{budgets: [{name: nogpu, profileSelector: {}, hard: {requests.nvidia.com/gpu: "0", requests.cpu: "8"}}]}`,
		},
		{
			reason: "an empty selector selects every Profile",
			yaml:   `{budgets: [{name: all, profileSelector: {}, hard: {count/pods: "100"}, grant: {count/pods: "5"}}]}`,
		},
		{
			reason: "name, selector and hard are required",
			yaml:   `{budgets: [{grant: {}}]}`,
			want: []string{
				`budgets[0]: name "": a lowercase RFC 1123 label`,
				`budgets[0]: profileSelector is required (use {} for every Profile)`,
				`budgets[0]: hard is empty: name at least one resource`,
			},
		},
		{
			reason: "a bad name, a bad selector and a duplicate",
			yaml: `{budgets: [{name: Lab_1, profileSelector: {matchExpressions: [{key: lab, operator: Sometimes}]}, hard: {requests.cpu: "1"}},
			 {name: a, profileSelector: {}, hard: {requests.cpu: "1"}}, {name: a, profileSelector: {}, hard: {requests.cpu: "1"}}]}`,
			want: []string{
				`budgets[0] (Lab_1): name "Lab_1": a lowercase RFC 1123 label`,
				`budgets[0] (Lab_1): profileSelector: "Sometimes" is not a valid label selector operator`,
				`budgets[2] (a): name "a" is used by an earlier budget`,
			},
		},
		{
			reason: "resource names and values the API server refuses, as the quotas plugin words them",
			yaml:   `{budgets: [{name: b, profileSelector: {}, hard: {gpus: "1", requests.nvidia.com/gpu: "1.5", requests.cpu: "-1", requests.memory: "1.5", count/pods: "2.5"}}]}`,
			want: []string{
				`budgets[0] (b): hard[count/pods]: count/pods 2500m is not a whole number`,
				`budgets[0] (b): hard[gpus]: not a resource a quota can limit (want a standard name such as limits.cpu, or a name with a domain)`,
				`budgets[0] (b): hard[requests.cpu]: -1 is negative`,
				`budgets[0] (b): hard[requests.memory]: 1500m is not a whole number of units (only CPU takes fractions)`,
				`budgets[0] (b): hard[requests.nvidia.com/gpu]: 1500m is not a whole number of units (only CPU takes fractions)`,
			},
		},
		{
			reason: "a grant must be of a resource of hard, and more than 0",
			yaml:   `{budgets: [{name: b, profileSelector: {}, hard: {requests.cpu: "4"}, grant: {requests.memory: 1Gi, requests.cpu: "0"}}]}`,
			want: []string{
				`budgets[0] (b): grant[requests.cpu]: must be more than 0, or left out for the default`,
				`budgets[0] (b): grant[requests.memory]: not a resource of hard`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			_, err := decodeYAML(t, tt.yaml)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestProfileCannotSetBudgets: who may spend what is the host's decision.
func TestProfileCannotSetBudgets(t *testing.T) {
	def := budgets.Definition()
	p := profileWithSpec("team-a", `{"budgets": [{"name": "mine", "profileSelector": {}, "hard": {"requests.cpu": "1000"}}]}`)
	if _, err := def.Decode(nil, p); err == nil || !strings.Contains(err.Error(), "budgets") {
		t.Fatalf("a Profile's spec set the budgets: err %v", err)
	}
}

// TestDefaultGrant is a tenth of hard, rounded up to the resource's unit.
func TestDefaultGrant(t *testing.T) {
	cfg, err := decodeYAML(t, `{budgets: [{name: lab, profileSelector: {}, hard: {requests.nvidia.com/gpu: "16", requests.cpu: "6", requests.memory: 64Gi, count/pods: "5"}, grant: {requests.cpu: "2"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[corev1.ResourceName]string{}
	for name, q := range cfg.(*budgets.Config).Budgets[0].Grant {
		got[name] = q.String()
	}
	want := map[corev1.ResourceName]string{
		"requests.nvidia.com/gpu": "2", "requests.cpu": "2", "count/pods": "1",
		"requests.memory": resource.NewQuantity((64<<30+9)/10, resource.BinarySI).String(),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
}

// decodeYAML decodes host defaults written in YAML, as the host's config
// file holds them.
func decodeYAML(t *testing.T, doc string) (any, error) {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return budgets.Definition().DecodeHostDefaults(raw)
}
