package reconcilers

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

func TestSetCondition(t *testing.T) {
	others := []kubeflowv1.ProfileCondition{{Type: "Zeta", Status: "True"}, {Type: "Alpha", Status: "False"}}
	tests := []struct {
		reason      string
		in          []kubeflowv1.ProfileCondition
		set         kubeflowv1.ProfileCondition
		want        []kubeflowv1.ProfileCondition
		wantChanged bool
	}{
		{
			reason:      "appended after others, whose order stays",
			in:          others,
			set:         kubeflowv1.ProfileCondition{Type: "QuotasReady", Status: "True"},
			want:        append(others[:2:2], kubeflowv1.ProfileCondition{Type: "QuotasReady", Status: "True"}),
			wantChanged: true,
		},
		{
			reason:      "replaced in place",
			in:          []kubeflowv1.ProfileCondition{others[0], {Type: "QuotasReady", Status: "True"}, others[1]},
			set:         kubeflowv1.ProfileCondition{Type: "QuotasReady", Status: "False", Message: "x"},
			want:        []kubeflowv1.ProfileCondition{others[0], {Type: "QuotasReady", Status: "False", Message: "x"}, others[1]},
			wantChanged: true,
		},
		{
			reason: "the same condition changes nothing",
			in:     []kubeflowv1.ProfileCondition{{Type: "QuotasReady", Status: "True", Message: "m"}},
			set:    kubeflowv1.ProfileCondition{Type: "QuotasReady", Status: "True", Message: "m"},
			want:   []kubeflowv1.ProfileCondition{{Type: "QuotasReady", Status: "True", Message: "m"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got, changed := setCondition(tt.in, tt.set)
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}
