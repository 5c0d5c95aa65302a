package reconcilers

// This file holds configs: a Reconciler's decoded plugin configs, so that a
// pass decodes a Profile's config only when what it is decoded from changed.

import (
	"bytes"
	"sync"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// maxConfigs bounds the configs a Reconciler keeps. Most Profiles give a
// plugin no spec of their own and share one config; a plugin whose every
// Profile gives one (egress's hosts) keeps up to this many, then starts
// again.
const maxConfigs = 1024

// configs keeps a plugin's decoded configs by what plugins.Definition.Decode
// decodes them from: the host's defaults (a Reconciler has two under a
// staged rollout, the stable and the candidate settings) and the Profile's
// spec.plugins entry for the plugin, which only a new generation of the
// Profile changes. Profiles with the same entry (most have none) share one
// config, which plugins read and never modify (plugins.Request.Config).
// Only configs that decoded are kept: a failure is decoded again, and
// reported, each time.
type configs struct {
	mu sync.Mutex
	// byDefaults holds the configs of the stable settings, then of the
	// candidate ones, by the Profile's spec entry.
	byDefaults [2]map[string]any
	n          int
}

// decode returns the config of p under settings s, decoding it with the
// Reconciler's definition unless a pass decoded the same before.
func (r *Reconciler) decode(s settings, p *kubeflowv1.Profile) (any, error) {
	c := &r.configs
	spec, ok := specOf(p, r.def.Kind())
	set := 0
	if s.candidate {
		set = 1
	}
	if ok {
		c.mu.Lock()
		cfg, hit := c.byDefaults[set][string(spec)]
		c.mu.Unlock()
		if hit {
			return cfg, nil
		}
	}
	cfg, err := r.def.Decode(s.Defaults, p)
	if err != nil || !ok {
		return cfg, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n >= maxConfigs {
		c.byDefaults, c.n = [2]map[string]any{}, 0
	}
	if c.byDefaults[set] == nil {
		c.byDefaults[set] = map[string]any{}
	}
	if _, had := c.byDefaults[set][string(spec)]; !had {
		c.byDefaults[set][string(spec)] = cfg
		c.n++
	}
	return cfg, nil
}

// specOf returns the spec of p's entry for plugin kind as Decode reads it
// (nil for none, an empty or a null one), and false when p lists the
// plugin more than once, which Decode refuses.
func specOf(p *kubeflowv1.Profile, kind string) ([]byte, bool) {
	var spec []byte
	found := false
	for i := range p.Spec.Plugins {
		e := &p.Spec.Plugins[i]
		if e.Kind != kind {
			continue
		}
		if found {
			return nil, false
		}
		found = true
		if e.Spec != nil {
			spec = bytes.TrimSpace(e.Spec.Raw)
		}
	}
	if string(spec) == "null" {
		spec = nil
	}
	return spec, true
}
