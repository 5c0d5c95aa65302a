package server

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/plugins"
)

// withHostConfigMaps narrows the cache of ConfigMaps to the records'
// namespace, the host's own, which holds what it reads of them through the
// cache (the outside-state records and the names' tenures), unless an enabled plugin writes ConfigMaps into the
// Profiles' namespaces (replicate's copies, a template of one): the host
// then needs rights on ConfigMaps in its own namespace only. Configs that
// do not decode are left to the reconcilers, which report them.
func withHostConfigMaps(opts cache.Options, cfg *hostconfig.Config, reg *plugins.Registry) cache.Options {
	if writesConfigMaps(cfg, reg) {
		return opts
	}
	namespaces := map[string]cache.Config{cfg.RecordsNamespace(): {}}
	opts.ByObject[&corev1.ConfigMap{}] = cache.ByObject{Namespaces: namespaces, Label: plugins.ManagedSelector()}
	return opts
}

// writesConfigMaps reports whether a plugin cfg enables owns ConfigMaps.
func writesConfigMaps(cfg *hostconfig.Config, reg *plugins.Registry) bool {
	for _, kind := range cfg.Enabled() {
		def, ok := reg.Get(kind)
		if !ok {
			continue
		}
		if def.OwnsFrom != nil {
			sec, _ := cfg.Section(kind)
			c, err := def.DecodeHostDefaults(sec.Defaults)
			if err != nil {
				continue
			}
			if def, err = def.ForHost(c); err != nil {
				continue
			}
		}
		for _, gvk := range def.Owns {
			if gvk.Group == "" && gvk.Kind == "ConfigMap" {
				return true
			}
		}
	}
	return false
}
