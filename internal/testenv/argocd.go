package testenv

import (
	"fmt"
	"os"
	"path/filepath"
)

// ArgoCDVersion is the Argo CD release whose CRDs the tests install. Keep it
// in step with the Makefile.
const ArgoCDVersion = "2.14.21"

// ArgoCDCRDs returns the folder that make fills with the CRDs of the Argo CD
// Go module (Application, AppProject, ApplicationSet), beside kube-apiserver
// and etcd. It fails with a message that names make test when they are missing.
func ArgoCDCRDs() (string, error) {
	assets, err := AssetsDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(assets, "argocd-v"+ArgoCDVersion)
	if _, err := os.Stat(filepath.Join(dir, "application-crd.yaml")); err != nil {
		return "", fmt.Errorf("Argo CD CRDs not found in %s: run `make test` (or `make argocd-crds`), which copies them from the Argo CD module", dir)
	}
	return dir, nil
}
