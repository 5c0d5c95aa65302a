package reconcilers

import (
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// CacheOptions returns manager cache options under which every kind is
// cached only for the objects profilekit labels, except Profiles, which are
// cached in full (or only those in the shard). A cluster's unrelated Secrets,
// ConfigMaps and RoleBindings never reach memory.
func CacheOptions(shard labels.Selector) cache.Options {
	// A nil selector would take the default (our label), which no Profile has.
	profiles := cache.ByObject{Label: labels.Everything()}
	if shard != nil {
		profiles.Label = shard
	}
	return cache.Options{
		DefaultLabelSelector: plugins.ManagedSelector(),
		ByObject: map[client.Object]cache.ByObject{
			&kubeflowv1.Profile{}: profiles,
		},
	}
}
