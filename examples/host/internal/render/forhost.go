package render

import (
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/plugins"
)

// forHost returns def as a host runs it with sec's defaults (see
// plugins.Definition.ForHost), and the REST mapper its fake client answers
// with. Offline, every kind the host's config names for the plugin counts
// as a served, namespaced kind: only a cluster can tell otherwise.
func (r *Renderer) forHost(def plugins.Definition, sec hostconfig.Plugin) (plugins.Definition, meta.RESTMapper, error) {
	if def.OwnsFrom == nil {
		return def, r.mapper, nil
	}
	hostCfg, err := def.DecodeHostDefaults(sec.Defaults)
	if err != nil {
		return def, nil, err
	}
	full, err := def.ForHost(hostCfg)
	if err != nil {
		return def, nil, err
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range full.Owns[len(def.Owns):] {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	return full, mapper, nil
}
