package testenv

import (
	"fmt"
	"os"
	"path/filepath"
)

// PrometheusOperatorVersion is the Prometheus Operator release whose CRDs
// the tests install. Keep it in step with the Makefile.
const PrometheusOperatorVersion = "0.85.0"

// PrometheusOperatorCRDs returns the folder that make fills with the
// ServiceMonitor and PrometheusRule CRDs of the Prometheus Operator Go module,
// beside kube-apiserver and etcd. It fails with a message that names make
// test when they are missing.
func PrometheusOperatorCRDs() (string, error) {
	assets, err := AssetsDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(assets, "prometheus-operator-v"+PrometheusOperatorVersion)
	if _, err := os.Stat(filepath.Join(dir, "monitoring.coreos.com_servicemonitors.yaml")); err != nil {
		return "", fmt.Errorf("Prometheus Operator CRDs not found in %s: run `make test` (or `make prometheus-crds`), which copies them from the Prometheus Operator module", dir)
	}
	return dir, nil
}
