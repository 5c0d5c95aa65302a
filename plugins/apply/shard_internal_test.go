package apply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// TestShardLabelsFollowTheProfile: an Applier WithShardLabels gives every
// object the Profile's value of each key the shard selector reads, takes a
// key the Profile lacks off the object whatever the plugin set, and leaves
// ownership labels and every other label as they were: the shard selector
// selects the objects exactly when it selects the Profile.
func TestShardLabelsFollowTheProfile(t *testing.T) {
	shard, err := labels.Parse("shard in (a,b),!retired")
	if err != nil {
		t.Fatal(err)
	}
	// A selector may read our own keys too; those stay as ownership sets them.
	withOurs, err := labels.Parse("shard in (a,b),!retired," + plugins.LabelManagedBy + "=x")
	if err != nil {
		t.Fatal(err)
	}
	p := &kubeflowv1.Profile{}
	p.Name, p.UID = "team-a", "uid-1"
	for _, tc := range []struct {
		name      string
		profile   map[string]string
		plugin    map[string]string
		want      map[string]string
		selectsIt bool
	}{{
		name:      "the Profile's value over the plugin's",
		profile:   map[string]string{"shard": "a", "other": "x", plugins.LabelManagedBy: "x"},
		plugin:    map[string]string{"shard": "z", "retired": "yes", "app": "web"},
		want:      map[string]string{"shard": "a", "app": "web"},
		selectsIt: true,
	}, {
		name:    "a key the Profile lacks comes off",
		profile: map[string]string{"retired": "2026"},
		plugin:  map[string]string{"shard": "a"},
		want:    map[string]string{"retired": "2026"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p.Labels = tc.profile
			a := New(nil, "quotas", p, nil, WithShardLabels(withOurs))
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "team-a"}}}
			u.SetLabels(tc.plugin)
			a.own(u)
			want := plugins.OwnershipLabels("quotas", "team-a")
			for k, v := range tc.want {
				want[k] = v
			}
			if d := cmp.Diff(want, u.GetLabels()); d != "" {
				t.Errorf("labels (-want +got):\n%s", d)
			}
			if got := shard.Matches(labels.Set(u.GetLabels())); got != shard.Matches(labels.Set(p.Labels)) || got != tc.selectsIt {
				t.Errorf("the shard selects the object: %t, the Profile: %t, want %t", got, shard.Matches(labels.Set(p.Labels)), tc.selectsIt)
			}
		})
	}
	a := New(nil, "quotas", p, nil, WithShardLabels(nil), WithShardLabels(labels.Everything()))
	if len(a.profileLabels) != 0 {
		t.Errorf("no shard, or every Profile, copies %v", a.profileLabels)
	}
}
