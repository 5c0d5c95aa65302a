package apply

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// TestShardLabelsFollowTheProfile: an Applier WithShardLabels gives every
// object the Profile's value of each key the shard selector reads, under
// ShardKey of the key, and none when the Profile lacks the key, whatever
// the plugin set there; the Profile's own keys on the object stay as the
// plugin set them (a value a tenant chose never lands under a key anything
// else selects on). ObjectShard selects the object exactly when the shard
// selects the Profile.
func TestShardLabelsFollowTheProfile(t *testing.T) {
	shard, err := labels.Parse("shard in (a,b),!retired,example.com/team=ml")
	if err != nil {
		t.Fatal(err)
	}
	objects, err := ObjectShard(shard)
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
		name:    "the Profile's values under our keys",
		profile: map[string]string{"shard": "a", "example.com/team": "ml", "other": "x"},
		plugin:  map[string]string{"shard": "z", "app": "web", ShardKey("shard"): "z", ShardKey("retired"): "yes"},
		want: map[string]string{"shard": "z", "app": "web",
			ShardKey("shard"): "a", ShardKey("example.com/team"): "ml"},
		selectsIt: true,
	}, {
		name:    "a key the Profile lacks is not carried",
		profile: map[string]string{"retired": "2026", "example.com/team": "ml"},
		plugin:  map[string]string{ShardKey("shard"): "a"},
		want:    map[string]string{ShardKey("retired"): "2026", ShardKey("example.com/team"): "ml"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p.Labels = tc.profile
			a := New(nil, "quotas", p, nil, WithShardLabels(shard))
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
			if got := objects.Matches(labels.Set(u.GetLabels())); got != shard.Matches(labels.Set(p.Labels)) || got != tc.selectsIt {
				t.Errorf("the object's shard selects it: %t, the shard selects the Profile: %t, want %t", got, shard.Matches(labels.Set(p.Labels)), tc.selectsIt)
			}
		})
	}
	a := New(nil, "quotas", p, nil, WithShardLabels(nil), WithShardLabels(labels.Everything()))
	if len(a.shardKeys) != 0 {
		t.Errorf("no shard, or every Profile, carries %v", a.shardKeys)
	}
}

// TestShardKeyIsOursAndValid: every label key maps to a valid key under
// ShardLabelPrefix, and keys that differ only in their prefix, or share a
// long name, map apart.
func TestShardKeyIsOursAndValid(t *testing.T) {
	long := strings.Repeat("n", 63)
	keys := []string{"shard", "a.b/c", "a/b.c", "example.com/team", "other.example.com/team", long, "x.io/" + long, "y.io/" + long, "profilekit.dev/shard"}
	seen := map[string]string{}
	for _, k := range keys {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			t.Fatalf("test key %q is not a label key: %v", k, errs)
		}
		got := ShardKey(k)
		if !strings.HasPrefix(got, ShardLabelPrefix) {
			t.Errorf("ShardKey(%q) = %q, not under %s", k, got, ShardLabelPrefix)
		}
		if errs := validation.IsQualifiedName(got); len(errs) > 0 {
			t.Errorf("ShardKey(%q) = %q is not a label key: %v", k, got, errs)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("ShardKey(%q) = ShardKey(%q) = %q", k, other, got)
		}
		seen[got] = k
	}
}
