package network

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

//go:embed presets/*.yaml
var presets embed.FS

// presetJSON holds every shipped preset as JSON, converted once: a host
// that names a preset reads it on every decode of a Profile's config.
var presetJSON = sync.OnceValue(func() map[string][]byte {
	out := map[string][]byte{}
	entries, _ := presets.ReadDir("presets")
	for _, e := range entries {
		data, err := presets.ReadFile(path.Join("presets", e.Name()))
		if err != nil {
			continue
		}
		// A preset that does not convert is left out, so that naming it
		// fails as unknown; TestPresetsAndExamplesLoad loads every one.
		if js, err := yaml.YAMLToJSON(data); err == nil {
			out[strings.TrimSuffix(e.Name(), ".yaml")] = js
		}
	}
	return out
})

// Presets returns the names of the shipped presets, sorted.
func Presets() []string {
	entries, _ := presets.ReadDir("presets")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	slices.Sort(names)
	return names
}

// Preset returns a shipped preset as JSON, ready to be the plugin's host
// defaults (reconcilers.WithDefaults) or to be decoded with LoadConfig. The
// presets are starting points: their namespaces and labels are the common
// defaults (statcan's are StatCan's), and a host that differs names the
// preset in Config.Preset and replaces or excludes policies, or copies the
// YAML and edits it.
func Preset(name string) ([]byte, error) {
	js, ok := presetJSON()[name]
	if !ok {
		return nil, fmt.Errorf("network preset %q: not one of %v", name, Presets())
	}
	return bytes.Clone(js), nil
}

// presetPolicies decodes a preset's policies, strictly.
func presetPolicies(name string) ([]Policy, error) {
	js, err := Preset(name)
	if err != nil {
		return nil, err
	}
	var set struct {
		Policies []Policy `json:"policies"`
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&set); err != nil {
		return nil, fmt.Errorf("network preset %q: %w", name, err)
	}
	return set.Policies, nil
}

// Effective returns the policies a Profile gets before gates are read.
// Without a preset they are Policies. With one, they are the preset's
// policies in the preset's order, less those Exclude names, each replaced in
// place by the policy of Policies that has its name; then the other
// Policies, in their order. An unknown preset is an error.
func (c *Config) Effective() ([]Policy, error) {
	if c.Preset == "" {
		return c.Policies, nil
	}
	base, err := presetPolicies(c.Preset)
	if err != nil {
		return nil, err
	}
	own := make(map[string]int, len(c.Policies))
	for i, p := range c.Policies {
		if _, seen := own[p.Name]; !seen {
			own[p.Name] = i
		}
	}
	replaced := map[string]bool{}
	out := make([]Policy, 0, len(base)+len(c.Policies))
	for _, p := range base {
		if slices.Contains(c.Exclude, p.Name) {
			continue
		}
		if i, ok := own[p.Name]; ok {
			p = c.Policies[i]
			replaced[p.Name] = true
		}
		out = append(out, p)
	}
	for _, p := range c.Policies {
		if !replaced[p.Name] {
			out = append(out, p)
		}
	}
	return out, nil
}

// validatePreset checks the preset's name and that Exclude names only
// policies of it, none of which Policies also replaces.
func (c *Config) validatePreset() error {
	if c.Preset == "" {
		if len(c.Exclude) > 0 {
			return errors.New("exclude: needs a preset")
		}
		return nil
	}
	base, err := presetPolicies(c.Preset)
	if err != nil {
		return fmt.Errorf("preset: %w", err)
	}
	var errs []error
	for i, name := range c.Exclude {
		switch {
		case !slices.ContainsFunc(base, func(p Policy) bool { return p.Name == name }):
			errs = append(errs, fmt.Errorf("%s: preset %s has no policy %q", field.NewPath("exclude").Index(i), c.Preset, name))
		case slices.ContainsFunc(c.Policies, func(p Policy) bool { return p.Name == name }):
			errs = append(errs, fmt.Errorf("%s: %q is also under policies; replace it or exclude it, not both", field.NewPath("exclude").Index(i), name))
		}
	}
	return errors.Join(errs...)
}
