package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/plugins"
)

// Keys of the Secret a self-signing host keeps its certificate in.
const (
	// SecretCert holds the serving certificate followed by its CA.
	SecretCert = corev1.TLSCertKey
	// SecretKey holds the serving certificate's key.
	SecretKey = corev1.TLSPrivateKeyKey
	// SecretCA holds the CAs the webhook configuration trusts: the current
	// one and, after a renewal, the one before it, so that replicas that
	// still serve the old certificate are trusted until they reload.
	SecretCA = "ca.crt"
)

// Lifetimes of a self-signed certificate.
const (
	certLifetime = 365 * 24 * time.Hour
	// renewBefore renews a certificate when less than this is left.
	renewBefore = 90 * 24 * time.Hour
	// DefaultResyncCertificate is how often each replica reloads the Secret
	// and puts the CA back into the webhook configuration, which a
	// re-applied manifest may have emptied.
	DefaultResyncCertificate = time.Minute
)

// SelfSigned serves the webhook with a certificate the host made itself. It
// keeps the certificate and its CA in a Secret that every replica shares
// (the first to start makes it), writes the CA into each webhook of the
// ValidatingWebhookConfiguration, renews the certificate before it expires,
// and reloads it, all without leader election: every replica serves.
type SelfSigned struct {
	cfg       hostconfig.SelfSigned
	namespace string
	reader    client.Reader
	writer    client.Writer
	period    time.Duration

	cert atomic.Pointer[tls.Certificate]
}

// NewSelfSigned returns a SelfSigned for the Secret in namespace (the
// configuration's, when it names one) that reads through reader (uncached,
// so that the host caches no Secrets) and writes through writer.
func NewSelfSigned(cfg hostconfig.SelfSigned, namespace string, reader client.Reader, writer client.Writer) (*SelfSigned, error) {
	if cfg.SecretNamespace != "" {
		namespace = cfg.SecretNamespace
	}
	if namespace == "" {
		return nil, errors.New("webhook.selfSigned.secretNamespace: empty, and the host cannot tell its own namespace; set it")
	}
	return &SelfSigned{cfg: cfg, namespace: namespace, reader: reader, writer: writer, period: DefaultResyncCertificate}, nil
}

// GetCertificate is the webhook server's tls.Config.GetCertificate.
func (s *SelfSigned) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c := s.cert.Load()
	if c == nil {
		return nil, errors.New("the self-signed webhook certificate is not loaded yet")
	}
	return c, nil
}

// NeedLeaderElection is false: every replica serves the webhook.
func (s *SelfSigned) NeedLeaderElection() bool { return false }

// Start keeps the certificate and the webhook configuration in place until
// ctx is done. Failures are logged and retried.
func (s *SelfSigned) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithValues("secret", s.namespace+"/"+s.cfg.SecretName, "webhookConfiguration", s.cfg.ConfigurationName)
	// Until the first success, retry quickly: the webhook cannot serve.
	backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 8, Cap: 30 * time.Second}
	for s.cert.Load() == nil {
		if err := s.Ensure(ctx); err != nil {
			logger.Error(err, "set up the self-signed webhook certificate")
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff.Step()):
			}
		}
	}
	wait.JitterUntilWithContext(ctx, func(ctx context.Context) {
		if err := s.Ensure(ctx); err != nil {
			logger.Error(err, "keep the self-signed webhook certificate")
		}
	}, s.period, 0.1, false)
	return nil
}

// Ensure makes the Secret hold a current certificate for the configured
// names, loads it, and puts its CAs into the webhook configuration.
func (s *SelfSigned) Ensure(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sec, err := s.secret(ctx)
	if err != nil {
		return err
	}
	pair, err := tls.X509KeyPair(sec.Data[SecretCert], sec.Data[SecretKey])
	if err != nil {
		return fmt.Errorf("secret %s/%s: %w", s.namespace, s.cfg.SecretName, err)
	}
	s.cert.Store(&pair)
	return s.injectCA(ctx, sec.Data[SecretCA])
}

// secret returns the Secret with a certificate that is current and covers
// the configured names, making or renewing it when needed.
func (s *SelfSigned) secret(ctx context.Context) (*corev1.Secret, error) {
	key := client.ObjectKey{Namespace: s.namespace, Name: s.cfg.SecretName}
	var sec corev1.Secret
	err := s.reader.Get(ctx, key, &sec)
	switch {
	case apierrors.IsNotFound(err):
		fresh, err := s.generate(nil)
		if err != nil {
			return nil, err
		}
		fresh.ObjectMeta = metav1.ObjectMeta{Namespace: s.namespace, Name: s.cfg.SecretName, Labels: map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue}}
		err = s.writer.Create(ctx, fresh)
		if apierrors.IsAlreadyExists(err) {
			// Another replica was first; use its certificate.
			return s.secret(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("create secret %s: %w", key, err)
		}
		return fresh, nil
	case err != nil:
		return nil, fmt.Errorf("read secret %s: %w", key, err)
	}
	if s.current(&sec) {
		return &sec, nil
	}
	renewed, err := s.generate(sec.Data[SecretCA])
	if err != nil {
		return nil, err
	}
	sec.Data = renewed.Data
	// The resource version guards the write: of two replicas that renew at
	// once, one wins and the other reads its certificate next time.
	if err := s.writer.Update(ctx, &sec); err != nil {
		return nil, fmt.Errorf("renew the certificate in secret %s: %w", key, err)
	}
	return &sec, nil
}

// current reports whether the Secret's certificate parses, is valid for
// longer than renewBefore, and covers every configured name and address.
func (s *SelfSigned) current(sec *corev1.Secret) bool {
	block, _ := pem.Decode(sec.Data[SecretCert])
	if block == nil || len(sec.Data[SecretKey]) == 0 || len(sec.Data[SecretCA]) == 0 {
		return false
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil || time.Until(c.NotAfter) < renewBefore {
		return false
	}
	for _, n := range s.cfg.DNSNames {
		if !slices.Contains(c.DNSNames, n) {
			return false
		}
	}
	for _, a := range s.cfg.IPAddresses {
		if !slices.ContainsFunc(c.IPAddresses, func(ip net.IP) bool { return ip.Equal(net.ParseIP(a)) }) {
			return false
		}
	}
	return true
}

// generate makes a CA and a serving certificate signed by it. previous is the
// CA bundle before, whose first CA stays trusted beside the new one.
func (s *SelfSigned) generate(previous []byte) (*corev1.Secret, error) {
	var host string
	var dns []string
	var ips []net.IP
	for _, a := range s.cfg.IPAddresses {
		ips = append(ips, net.ParseIP(a))
	}
	if len(s.cfg.DNSNames) > 0 {
		host, dns = s.cfg.DNSNames[0], s.cfg.DNSNames[1:]
	} else {
		host, ips = ips[0].String(), ips[1:]
	}
	chain, key, err := certutil.GenerateSelfSignedCertKeyWithOptions(certutil.SelfSignedCertKeyOptions{
		Host: host, AlternateDNS: dns, AlternateIPs: ips, MaxAge: certLifetime,
	})
	if err != nil {
		return nil, fmt.Errorf("generate the webhook certificate: %w", err)
	}
	// The chain is the serving certificate, then its CA.
	_, rest := pem.Decode(chain)
	ca := bytes.TrimSpace(rest)
	bundle := append(slices.Clone(ca), '\n')
	if old, _ := pem.Decode(previous); old != nil {
		bundle = append(bundle, pem.EncodeToMemory(old)...)
	}
	return &corev1.Secret{
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{SecretCert: chain, SecretKey: key, SecretCA: bundle},
	}, nil
}

// injectCA writes ca into every webhook of the configuration that does not
// hold it yet.
func (s *SelfSigned) injectCA(ctx context.Context, ca []byte) error {
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := s.reader.Get(ctx, client.ObjectKey{Name: s.cfg.ConfigurationName}, &vwc); err != nil {
		return fmt.Errorf("read validatingwebhookconfiguration %s: %w", s.cfg.ConfigurationName, err)
	}
	changed := false
	for i := range vwc.Webhooks {
		if !bytes.Equal(vwc.Webhooks[i].ClientConfig.CABundle, ca) {
			vwc.Webhooks[i].ClientConfig.CABundle = ca
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := s.writer.Update(ctx, &vwc); err != nil {
		return fmt.Errorf("write the CA into validatingwebhookconfiguration %s: %w", s.cfg.ConfigurationName, err)
	}
	return nil
}
