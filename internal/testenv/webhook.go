package testenv

import "sigs.k8s.io/controller-runtime/pkg/envtest"

// Webhook returns where the API server calls the webhooks of
// Options.Webhooks: LocalServingHost and LocalServingPort, and the serving
// certificate in LocalServingCertDir (tls.crt, tls.key) that the API server
// trusts. A URL webhook's path is appended to the address after a slash.
func (e *Env) Webhook() *envtest.WebhookInstallOptions {
	return &e.env.WebhookInstallOptions
}
