package server

import (
	"crypto/tls"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/profilekit/profilekit/examples/host/internal/admission"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
	"github.com/profilekit/profilekit/reconcilers"
)

// webhookServer returns the webhook server cfg asks for, and the runnable
// that keeps a self-signed certificate (nil for certificates: files).
func webhookServer(restCfg *rest.Config, cfg *hostconfig.Config, s *runtime.Scheme) (webhook.Server, *admission.SelfSigned, error) {
	w := cfg.Webhook
	opts := webhook.Options{Host: w.Host, Port: w.Port, CertDir: w.CertDir}
	if w.Certificates != hostconfig.CertificatesSelfSigned {
		return webhook.NewServer(opts), nil, nil
	}
	// An uncached client: the host must not cache every Secret to read one.
	c, err := client.New(restCfg, client.Options{Scheme: s})
	if err != nil {
		return nil, nil, fmt.Errorf("webhook: %w", err)
	}
	c = reconcilers.WithTimeout(c, cfg.Client.Timeout())
	ss, err := admission.NewSelfSigned(w.SelfSigned, cfg.HostNamespace(), c, c)
	if err != nil {
		return nil, nil, err
	}
	opts.TLSOpts = []func(*tls.Config){func(t *tls.Config) { t.GetCertificate = ss.GetCertificate }}
	return webhook.NewServer(opts), ss, nil
}

// addWebhook registers the Profile validator on mgr's webhook server, and
// the self-signed certificate's keeper when there is one.
func addWebhook(mgr manager.Manager, cfg *hostconfig.Config, reg *plugins.Registry, s *runtime.Scheme, ss *admission.SelfSigned) error {
	tenures := outside.Tenures{Reader: mgr.GetClient(), Live: mgr.GetAPIReader(), Namespace: cfg.RecordsNamespace()}
	mgr.GetWebhookServer().Register(cfg.Webhook.Path, admission.New(cfg, reg, s, admission.WithTenures(tenures),
		admission.WithClaims(mgr.GetAPIReader(), cfg.RecordsNamespace())).Webhook())
	if ss != nil {
		if err := mgr.Add(ss); err != nil {
			return fmt.Errorf("webhook: %w", err)
		}
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return errors.Join(errors.New("add the webhook's readiness check"), err)
	}
	return nil
}
