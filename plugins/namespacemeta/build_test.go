package namespacemeta_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/namespacemeta"
)

// hostAllow is the doc's allowlist, with an exact rule under a prefix rule.
var hostAllow = namespacemeta.Allow{
	Labels: []namespacemeta.Rule{
		{Key: "istio.io/rev"},
		{Key: "pod-security.kubernetes.io/enforce", Values: "^(baseline|restricted)$"},
		{Key: "example.org/*"},
		{Key: "example.org/tier", Values: "gold|silver"},
	},
	Annotations: []namespacemeta.Rule{{Key: "scheduler.alpha.kubernetes.io/node-selector"}},
}

// fileLabels are the core plugin's namespace labels file: one key the
// prefix rule would otherwise allow.
var fileLabels = map[string]string{"example.org/billing": "platform", "team": ""}

// problems returns the lines of a refusal, without the line that leads
// them, or the error itself when it is not one.
func problems(err error) []string {
	if err == nil {
		return nil
	}
	msg, ok := strings.CutPrefix(err.Error(), "refused, the namespace is left as it is: ")
	if !ok {
		return []string{err.Error()}
	}
	return strings.Split(msg, "\n")
}

func TestBuild(t *testing.T) {
	tests := []struct {
		reason      string
		labels      map[string]string
		annotations map[string]string
		// allow, when set, replaces hostAllow: a list no host could load
		// (Validate refuses it), to show the key is refused all the same.
		allow   *namespacemeta.Allow
		want    plugins.Marks
		wantErr []string
	}{
		{reason: "nothing asked, nothing marked"},
		{
			reason: "allowed keys, exact and by prefix, with values the patterns admit",
			labels: map[string]string{
				"istio.io/rev":                       "canary",
				"pod-security.kubernetes.io/enforce": "restricted",
				"example.org/cost-centre":            "cc-1234",
				"example.org/tier":                   "gold",
			},
			annotations: map[string]string{"scheduler.alpha.kubernetes.io/node-selector": "pool=team-a, zone=b"},
			want: plugins.Marks{
				Labels: map[string]string{
					"istio.io/rev":                       "canary",
					"pod-security.kubernetes.io/enforce": "restricted",
					"example.org/cost-centre":            "cc-1234",
					"example.org/tier":                   "gold",
				},
				Annotations: map[string]string{"scheduler.alpha.kubernetes.io/node-selector": "pool=team-a, zone=b"},
			},
		},
		{
			reason:  "a value outside the pattern",
			labels:  map[string]string{"pod-security.kubernetes.io/enforce": "privileged"},
			wantErr: []string{`labels[pod-security.kubernetes.io/enforce]: value "privileged" is not allowed: the host allows ^(baseline|restricted)$ only for pod-security.kubernetes.io/enforce`},
		},
		{
			reason:  "the pattern must match the whole value",
			labels:  map[string]string{"pod-security.kubernetes.io/enforce": "baseline-ish"},
			wantErr: []string{`labels[pod-security.kubernetes.io/enforce]: value "baseline-ish" is not allowed: the host allows ^(baseline|restricted)$ only for pod-security.kubernetes.io/enforce`},
		},
		{
			reason:  "an exact rule governs its key, not the prefix rule",
			labels:  map[string]string{"example.org/tier": "goldish"},
			wantErr: []string{`labels[example.org/tier]: value "goldish" is not allowed: the host allows gold|silver only for example.org/tier`},
		},
		{
			reason:  "a prefix rule does not cover subdomains",
			labels:  map[string]string{"team.example.org/cost-centre": "cc-1"},
			wantErr: []string{"labels[team.example.org/cost-centre]: not allowed by the host (allow.labels)"},
		},
		{
			reason:      "a key not listed",
			annotations: map[string]string{"istio.io/rev": "canary"},
			wantErr:     []string{"annotations[istio.io/rev]: not allowed by the host (allow.annotations)"},
		},
		{
			reason:  "kubernetes.io, listed or not",
			labels:  map[string]string{"kubernetes.io/metadata.name": "kube-system"},
			allow:   &namespacemeta.Allow{Labels: []namespacemeta.Rule{{Key: "kubernetes.io/metadata.name"}}},
			wantErr: []string{"labels[kubernetes.io/metadata.name]: the kubernetes.io prefix is Kubernetes' own, never allowed"},
		},
		{
			reason:      "k8s.io, listed or not",
			annotations: map[string]string{"k8s.io/x": "y"},
			allow:       &namespacemeta.Allow{Annotations: []namespacemeta.Rule{{Key: "k8s.io/*"}}},
			wantErr:     []string{"annotations[k8s.io/x]: the k8s.io prefix is Kubernetes' own, never allowed"},
		},
		{
			reason: "profilekit's ownership labels and its domain, listed or not",
			labels: map[string]string{
				plugins.LabelManagedBy:         "profilekit",
				plugins.LabelProfile:           "victim",
				"quotas.profilekit.dev/gpu":    "4",
				"app.kubernetes.io/part-of":    "kubeflow",
				"example.org/cost-centre":      "cc-1",
				"pod-security.kubernetes.io/x": "y",
			},
			annotations: map[string]string{plugins.AnnotationAppliedHash: "0"},
			allow: &namespacemeta.Allow{
				Labels:      []namespacemeta.Rule{{Key: "app.kubernetes.io/*"}, {Key: "profilekit.dev/*"}, {Key: "quotas.profilekit.dev/*"}, {Key: "example.org/*"}, {Key: "pod-security.kubernetes.io/*"}},
				Annotations: []namespacemeta.Rule{{Key: "profilekit.dev/*"}},
			},
			wantErr: []string{
				"labels[app.kubernetes.io/managed-by]: profilekit's ownership label, never allowed",
				"labels[profilekit.dev/profile]: the profilekit.dev domain is profilekit's own, never allowed",
				"labels[quotas.profilekit.dev/gpu]: the profilekit.dev domain is profilekit's own, never allowed",
				"annotations[profilekit.dev/applied-hash]: the profilekit.dev domain is profilekit's own, never allowed",
			},
		},
		{
			reason:      "the owner annotation, listed or not",
			annotations: map[string]string{"owner": "mallory@example.org"},
			allow:       &namespacemeta.Allow{Annotations: []namespacemeta.Rule{{Key: "owner"}}},
			wantErr:     []string{"annotations[owner]: the owner annotation that Kubeflow reads, never allowed"},
		},
		{
			reason:  "the core plugin's mesh label, listed or not",
			labels:  map[string]string{"istio-injection": "disabled"},
			allow:   &namespacemeta.Allow{Labels: []namespacemeta.Rule{{Key: "istio-injection"}}},
			wantErr: []string{"labels[istio-injection]: the core plugin's mesh label, never allowed"},
		},
		{
			reason:  "a key of the labels file, though its prefix is allowed; an empty value in the file counts too",
			labels:  map[string]string{"example.org/billing": "team-a", "team": "a"},
			allow:   &namespacemeta.Allow{Labels: []namespacemeta.Rule{{Key: "example.org/*"}, {Key: "team"}}},
			wantErr: []string{"labels[example.org/billing]: a key of the host's namespace labels file, never allowed", "labels[team]: a key of the host's namespace labels file, never allowed"},
		},
		{
			reason: "invalid keys and label values",
			labels: map[string]string{"example.org/bad key": "x", "example.org/long": strings.Repeat("v", 64), "example.org/dash": "-x"},
			annotations: map[string]string{
				"Scheduler.Alpha.Kubernetes.io/Node-Selector": "ok: upper case keys are valid annotations",
				"bad key": "x",
			},
			allow: &namespacemeta.Allow{Labels: []namespacemeta.Rule{{Key: "example.org/*"}}, Annotations: []namespacemeta.Rule{{Key: "bad key"}, {Key: "Scheduler.Alpha.Kubernetes.io/*"}}},
			wantErr: []string{
				`labels[example.org/bad key]: not a valid label key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`labels[example.org/dash]: value "-x": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
				`labels[example.org/long]: value "` + strings.Repeat("v", 64) + `": must be no more than 63 bytes`,
				`annotations[bad key]: not a valid annotation key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			},
		},
		{
			reason: "every refused key at once, and nothing of the allowed ones",
			labels: map[string]string{
				"istio.io/rev":                "canary",
				"kubernetes.io/metadata.name": "x",
				"istio-injection":             "disabled",
				"example.org/billing":         "x",
			},
			annotations: map[string]string{"owner": "mallory", "example.org/note": "x"},
			wantErr: []string{
				"labels[example.org/billing]: a key of the host's namespace labels file, never allowed",
				"labels[istio-injection]: the core plugin's mesh label, never allowed",
				"labels[kubernetes.io/metadata.name]: the kubernetes.io prefix is Kubernetes' own, never allowed",
				"annotations[example.org/note]: not allowed by the host (allow.annotations)",
				"annotations[owner]: the owner annotation that Kubeflow reads, never allowed",
			},
		},
		{
			reason:      "annotations larger than the API server takes",
			annotations: map[string]string{"scheduler.alpha.kubernetes.io/node-selector": strings.Repeat("x", 256*1024)},
			wantErr:     []string{"annotations: annotations size 262187 is larger than limit 262144"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			cfg := &namespacemeta.Config{Labels: tt.labels, Annotations: tt.annotations, Allow: hostAllow}
			if tt.allow != nil {
				cfg.Allow = *tt.allow
			}
			got, err := namespacemeta.Build(cfg, fileLabels)
			if diff := cmp.Diff(tt.wantErr, problems(err)); diff != "" {
				t.Errorf("refused (-want +got):\n%s", diff)
			}
			if err != nil && (!plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != plugins.ReasonInvalidSpec) {
				t.Errorf("error %v is not a terminal InvalidSpec", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("marks (-want +got):\n%s", diff)
			}
		})
	}
}
