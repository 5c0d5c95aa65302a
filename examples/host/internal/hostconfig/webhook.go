package hostconfig

import (
	"net"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Defaults of the admission webhook.
const (
	DefaultWebhookPort        = 9443
	DefaultWebhookCertDir     = "/tmp/k8s-webhook-server/serving-certs"
	DefaultWebhookPath        = "/validate-profiles"
	DefaultWebhookSecret      = "profilekit-webhook-tls"
	DefaultWebhookConfigName  = "profilekit"
	CertificatesFromFiles     = "files"
	CertificatesSelfSigned    = "selfSigned"
	defaultWebhookCertificate = CertificatesFromFiles
)

// Webhook configures the validating admission webhook that `profilekit run`
// serves for Profiles: it refuses a Profile whose plugin specs or override
// labels the plugins would refuse, with the message their condition would
// carry. The ValidatingWebhookConfiguration itself is part of the deployment
// (see examples/deploy/overlays/webhook-*).
type Webhook struct {
	// Enabled turns the webhook server on. Default false.
	Enabled bool `json:"enabled,omitempty"`
	// Port is where the webhook server listens. Default 9443.
	Port int `json:"port,omitempty"`
	// Host is the address the server binds; empty means every address.
	Host string `json:"host,omitempty"`
	// Path is the URL path of the webhook. Default /validate-profiles.
	Path string `json:"path,omitempty"`
	// Certificates says where the serving certificate comes from: files
	// (default: tls.crt and tls.key in CertDir, for instance from a
	// cert-manager Certificate's Secret) or selfSigned (the host makes its
	// own CA and certificate, keeps them in a Secret, and writes the CA into
	// the ValidatingWebhookConfiguration).
	Certificates string `json:"certificates,omitempty"`
	// CertDir holds tls.crt and tls.key for certificates: files.
	// Default /tmp/k8s-webhook-server/serving-certs.
	CertDir string `json:"certDir,omitempty"`
	// SelfSigned configures certificates: selfSigned.
	SelfSigned SelfSigned `json:"selfSigned,omitempty"`
	// WarnUnknownPlugins answers a Profile that lists a plugin this host
	// does not run with an admission warning (kubectl prints it). Default
	// true.
	WarnUnknownPlugins *bool `json:"warnUnknownPlugins,omitempty"`
}

// SelfSigned is where a host that makes its own certificate keeps it, and
// which webhook configuration trusts it.
type SelfSigned struct {
	// SecretNamespace and SecretName name the Secret that holds the CA and
	// the serving certificate, shared by every replica. The namespace
	// defaults to the one the host runs in; the name to profilekit-webhook-tls.
	SecretNamespace string `json:"secretNamespace,omitempty"`
	SecretName      string `json:"secretName,omitempty"`
	// DNSNames are the names the API server reaches the webhook by, such as
	// profilekit-webhook.profilekit-system.svc. At least one name or address.
	DNSNames []string `json:"dnsNames,omitempty"`
	// IPAddresses are addresses the API server reaches the webhook by, for a
	// webhook configured with a URL.
	IPAddresses []string `json:"ipAddresses,omitempty"`
	// ConfigurationName is the ValidatingWebhookConfiguration whose webhooks
	// get the CA. Default profilekit.
	ConfigurationName string `json:"configurationName,omitempty"`
}

// WarnsUnknownPlugins reports whether unknown plugin kinds get a warning.
func (w Webhook) WarnsUnknownPlugins() bool {
	return w.WarnUnknownPlugins == nil || *w.WarnUnknownPlugins
}

// webhook validates the webhook section and fills in its defaults.
func (p *parser) webhook(w *Webhook) {
	if w.Port == 0 {
		w.Port = DefaultWebhookPort
	}
	if w.Port < 1 || w.Port > 65535 {
		p.failf(field.NewPath("webhook", "port"), "want a port between 1 and 65535, got %d", w.Port)
	}
	if w.Path == "" {
		w.Path = DefaultWebhookPath
	}
	if !strings.HasPrefix(w.Path, "/") {
		p.failf(field.NewPath("webhook", "path"), "want a path that starts with /, got %q", w.Path)
	}
	if w.CertDir == "" {
		w.CertDir = DefaultWebhookCertDir
	}
	if w.Certificates == "" {
		w.Certificates = defaultWebhookCertificate
	}
	s := &w.SelfSigned
	switch w.Certificates {
	case CertificatesFromFiles:
		if len(s.DNSNames)+len(s.IPAddresses) > 0 || s.SecretName != "" || s.SecretNamespace != "" || s.ConfigurationName != "" {
			p.failf(field.NewPath("webhook", "selfSigned"), "is used only with certificates: %s, and certificates is %s", CertificatesSelfSigned, w.Certificates)
		}
		return
	case CertificatesSelfSigned:
	default:
		p.failf(field.NewPath("webhook", "certificates"), "want %s or %s, got %q", CertificatesFromFiles, CertificatesSelfSigned, w.Certificates)
		return
	}
	if s.SecretName == "" {
		s.SecretName = DefaultWebhookSecret
	}
	if s.ConfigurationName == "" {
		s.ConfigurationName = DefaultWebhookConfigName
	}
	for _, f := range []struct{ field, value string }{{"secretName", s.SecretName}, {"configurationName", s.ConfigurationName}} {
		if msgs := validation.IsDNS1123Subdomain(f.value); len(msgs) > 0 {
			p.failf(field.NewPath("webhook", "selfSigned", f.field), "%q: %s", f.value, strings.Join(msgs, "; "))
		}
	}
	if s.SecretNamespace != "" {
		if msgs := validation.IsDNS1123Label(s.SecretNamespace); len(msgs) > 0 {
			p.failf(field.NewPath("webhook", "selfSigned", "secretNamespace"), "%q: %s", s.SecretNamespace, strings.Join(msgs, "; "))
		}
	}
	if len(s.DNSNames)+len(s.IPAddresses) == 0 {
		p.failf(field.NewPath("webhook", "selfSigned", "dnsNames"), "empty: name the Service the API server calls, such as profilekit-webhook.profilekit-system.svc")
	}
	for i, n := range s.DNSNames {
		if msgs := validation.IsDNS1123Subdomain(n); len(msgs) > 0 {
			p.failf(field.NewPath("webhook", "selfSigned", "dnsNames").Index(i), "%q: %s", n, strings.Join(msgs, "; "))
		}
	}
	for i, a := range s.IPAddresses {
		if net.ParseIP(a) == nil {
			p.failf(field.NewPath("webhook", "selfSigned", "ipAddresses").Index(i), "%q is not an IP address", a)
		}
	}
}
