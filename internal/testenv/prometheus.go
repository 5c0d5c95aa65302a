package testenv

// PrometheusOperatorVersion is the Prometheus Operator release whose CRDs
// the tests install. Keep it in step with the Makefile.
const PrometheusOperatorVersion = "0.85.0"

// PrometheusOperatorCRDs returns the folder that make fills with the
// ServiceMonitor and PrometheusRule CRDs of the Prometheus Operator Go module,
// beside kube-apiserver and etcd. It fails with a message that names make
// test when they are missing.
func PrometheusOperatorCRDs() (string, error) {
	return assetsFolder("prometheus-operator-v"+PrometheusOperatorVersion, "monitoring.coreos.com_servicemonitors.yaml",
		"Prometheus Operator CRDs", "prometheus-crds", "the Prometheus Operator module")
}
