package reconcilers

import (
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// NewRESTMapper is a manager.Options.MapperProvider: controller-runtime's
// dynamic REST mapper, which remembers every mapping it found. The client
// maps an object's kind to its resource on every request, and the dynamic
// mapper answers through a chain of mappers that allocate on each call; a
// host writing thousands of objects a second spent more on that than on
// its own checks. Only mappings found are kept: a kind the API server does
// not serve yet is asked again, as before, so a CRD installed later is
// found.
func NewRESTMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return &foundMappings{RESTMapper: m}, nil
}

// foundMappings remembers the RESTMapping answers of the mapper it wraps,
// for one version asked at a time (the form the client uses).
type foundMappings struct {
	meta.RESTMapper
	found sync.Map // mappingKey -> meta.RESTMapping
}

type mappingKey struct {
	gk      schema.GroupKind
	version string
}

// RESTMapping returns a copy of the mapping found before for gk at version,
// or asks the wrapped mapper and keeps what it finds.
func (m *foundMappings) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) != 1 {
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	k := mappingKey{gk: gk, version: versions[0]}
	if v, ok := m.found.Load(k); ok {
		mapping := v.(meta.RESTMapping)
		return &mapping, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.found.Store(k, *mapping)
	return mapping, nil
}
