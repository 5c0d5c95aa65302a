package testenv

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// ModuleDir returns the folder of a module in the Go module cache, as
// `go list -m` reports it for profilekit's go.mod.
func ModuleDir(module string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", module, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("module %s is not downloaded: run go mod download", module)
	}
	return dir, nil
}

// IstioCRDs returns the path of the Istio CRDs shipped in the istio.io/api
// module that profilekit builds with, so tests validate against the real schema.
func IstioCRDs() (string, error) {
	dir, err := ModuleDir("istio.io/api")
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "kubernetes", "customresourcedefinitions.gen.yaml"), nil
}
