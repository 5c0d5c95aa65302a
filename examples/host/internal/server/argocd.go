package server

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apps"
)

// argoCDNamespaced is a plugin config that keeps Argo CD Applications in one
// namespace (apps, gitea).
type argoCDNamespaced interface{ ApplicationNamespace() string }

// withApplicationNamespaces narrows the cache of Applications to the Argo CD
// namespaces of the enabled plugins, so that the host needs rights on
// Applications there only. Configs that do not decode are left to the
// reconcilers, which report them.
func withApplicationNamespaces(opts cache.Options, cfg *hostconfig.Config, reg *plugins.Registry) cache.Options {
	namespaces := map[string]cache.Config{}
	for _, kind := range cfg.Enabled() {
		def, ok := reg.Get(kind)
		if !ok {
			continue
		}
		sec, _ := cfg.Section(kind)
		c, err := def.DecodeHostDefaults(sec.Defaults)
		if err != nil {
			continue
		}
		if a, ok := c.(argoCDNamespaced); ok {
			namespaces[a.ApplicationNamespace()] = cache.Config{}
		}
	}
	if len(namespaces) == 0 {
		return opts
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apps.ApplicationKind)
	opts.ByObject[u] = cache.ByObject{Namespaces: namespaces, Label: plugins.ManagedSelector()}
	return opts
}
