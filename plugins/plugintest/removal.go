package plugintest

// This file holds what a plugin may leave once it no longer applies to a
// Profile that stays: retained data, and no outside grant.

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// revokedLeft returns what the plugin still holds for the Profile once a
// Remove step is quiet and that it should have let go: outside state that
// Observe reports and that is not retained ([Scenario.Retained]), and any
// outside grant ([Scenario.Grants]) that was not there before the
// plugin's first pass, and any key of its outside-state record but those
// it remembers ([Scenario.Remembered]): a key left names a piece the
// plugin still takes for its own. Its objects in the cluster are the plugin's to keep
// or delete under the host's retention (the core plugin keeps the
// namespace, the Profile's data, and what is in it).
func (r *run) revokedLeft(ctx context.Context) ([]string, error) {
	var out []string
	if r.sc.Observe != nil {
		seen, err := r.sc.Observe(ctx, r.profile.Name)
		if err != nil {
			return nil, fmt.Errorf("observe: %w", err)
		}
		for k := range seen {
			if !slices.ContainsFunc(r.sc.Retained, func(p string) bool { return strings.HasPrefix(r.generic(k), p) }) {
				out = append(out, "observed "+r.generic(k)+" outlives the plugin's removal")
			}
		}
	}
	if r.sc.Grants != nil {
		grants, err := r.sc.Grants(ctx, r.profile.Name)
		if err != nil {
			return nil, err
		}
		for _, g := range grants {
			if g = r.generic(g); !r.foreign[g] {
				out = append(out, "outside grant "+g+" outlives the plugin's removal")
			}
		}
	}
	keys, err := r.recorded(ctx)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if !slices.ContainsFunc(r.sc.Remembered, func(p string) bool { return strings.HasPrefix(r.generic(k), p) }) {
			out = append(out, "record key "+r.generic(k)+" outlives the plugin's removal")
		}
	}
	slices.Sort(out)
	return out, nil
}
