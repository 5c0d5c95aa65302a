package demo

// This file reads the sample Profiles the demo creates.

import (
	"fmt"
	"os"
	"path/filepath"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/render"
)

// readProfiles reads every Profile in the *.yaml files of ProfilesDir.
func (d *demo) readProfiles() ([]*kubeflowv1.Profile, error) {
	files, err := filepath.Glob(filepath.Join(d.ProfilesDir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("sample Profiles: %w", err)
	}
	var out []*kubeflowv1.Profile
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			return nil, fmt.Errorf("sample Profiles: %w", err)
		}
		ps, err := render.ReadProfiles(r, f)
		r.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Profiles in %s/*.yaml", d.ProfilesDir)
	}
	return out, nil
}
