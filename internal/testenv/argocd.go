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
	return assetsFolder("argocd-v"+ArgoCDVersion, "application-crd.yaml", "Argo CD CRDs", "argocd-crds", "the Argo CD module")
}

// assetsFolder returns the folder name beside kube-apiserver and etcd when
// it holds file, and otherwise an error that names the make target which
// copies what (the CRDs) there from the module.
func assetsFolder(name, file, what, target, module string) (string, error) {
	assets, err := AssetsDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(assets, name)
	if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
		return "", fmt.Errorf("%s not found in %s: run `make test` (or `make %s`), which copies them from %s", what, dir, target, module)
	}
	return dir, nil
}
