package admission_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/examples/host/internal/admission"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/server"
)

// TestSelfSignedCertificate runs a host that makes its own certificate: it
// stores it in a Secret, writes its CA into a webhook configuration that has
// none, and the API server then reaches the webhook over TLS with it.
func TestSelfSignedCertificate(t *testing.T) {
	ctx := t.Context()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	const label = "test.profilekit.dev/self-signed"
	vwcName := unique("profilekit-self-signed")
	url := fmt.Sprintf("https://127.0.0.1:%d%s", port, hostconfig.DefaultWebhookPath)
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: vwcName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "selfsigned.profilekit.dev",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{label: "true"}},
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"kubeflow.org"}, APIVersions: []string{"v1", "v1beta1"}, Resources: []string{"profiles"}},
			}},
		}},
	}
	if err := env.Client.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), vwc) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	secretName := unique("profilekit-webhook-tls")
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: secretName}}) //nolint:forbidigo // cleanups run after t.Context is canceled
	})

	cfg, reg := hostConfig(t, nil)
	cfg.Webhook = hostconfig.Webhook{
		Enabled: true, Host: "127.0.0.1", Port: port, Path: hostconfig.DefaultWebhookPath,
		Certificates: hostconfig.CertificatesSelfSigned,
		SelfSigned: hostconfig.SelfSigned{
			SecretNamespace: "default", SecretName: secretName,
			IPAddresses: []string{"127.0.0.1"}, ConfigurationName: vwcName,
		},
	}
	mgr, err := server.NewManager(env.Config, cfg, reg, server.Options{MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() { cancel(); <-done })

	var sec corev1.Secret
	deadline := time.Now().Add(30 * time.Second)
	for {
		var live admissionregistrationv1.ValidatingWebhookConfiguration
		err1 := env.Client.Get(ctx, client.ObjectKey{Name: vwcName}, &live)
		err2 := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: secretName}, &sec)
		if err1 == nil && err2 == nil && len(live.Webhooks[0].ClientConfig.CABundle) > 0 {
			if got, want := string(live.Webhooks[0].ClientConfig.CABundle), string(sec.Data[admission.SecretCA]); got != want {
				t.Fatalf("caBundle is not the Secret's CA:\n%s\nwant\n%s", got, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no CA in the webhook configuration after 30s: %v, %v", err1, err2)
		}
		time.Sleep(100 * time.Millisecond)
	}

	bad := withLabel(profileWith(unique("self-signed-bad"), nil, "quotas", map[string]any{"hard": map[string]string{"limits.cpu": "lots"}}), label, "true")
	var err3 error
	deadline = time.Now().Add(20 * time.Second)
	for {
		// The webhook server may still be coming up: until then Fail refuses
		// with "failed calling webhook".
		err3 = apply(t, bad)
		if err3 != nil && strings.Contains(err3.Error(), `admission webhook "selfsigned.profilekit.dev" denied the request`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	want := `QuotasReady would be False: InvalidSpec: spec.plugins[0] (quotas).spec: field "hard[limits.cpu]": "lots" is not a quantity`
	if err3 == nil || !strings.Contains(err3.Error(), want) {
		t.Fatalf("error %v, want the self-signed webhook to deny with %q", err3, want)
	}
	good := withLabel(profileWith(unique("self-signed-good"), nil, "quotas", map[string]any{"hard": map[string]string{"limits.cpu": "16"}}), label, "true")
	if err := apply(t, good); err != nil {
		t.Errorf("a good Profile denied through the self-signed webhook: %v", err)
	}

	// A second replica finds the Secret and serves the same certificate.
	ss, err := admission.NewSelfSigned(cfg.Webhook.SelfSigned, "", env.Client, env.Client)
	if err != nil {
		t.Fatal(err)
	}
	if err := ss.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	var again corev1.Secret
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: secretName}, &again); err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != sec.ResourceVersion {
		t.Errorf("a second replica rewrote the Secret (resourceVersion %s -> %s)", sec.ResourceVersion, again.ResourceVersion)
	}

	// A re-applied manifest empties the caBundle; the next round puts it back.
	var live admissionregistrationv1.ValidatingWebhookConfiguration
	if err := env.Client.Get(ctx, client.ObjectKey{Name: vwcName}, &live); err != nil {
		t.Fatal(err)
	}
	live.Webhooks[0].ClientConfig.CABundle = nil
	if err := env.Client.Update(ctx, &live); err != nil {
		t.Fatal(err)
	}
	if err := ss.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: vwcName}, &live); err != nil {
		t.Fatal(err)
	}
	if string(live.Webhooks[0].ClientConfig.CABundle) != string(sec.Data[admission.SecretCA]) {
		t.Errorf("the CA was not put back: %q", live.Webhooks[0].ClientConfig.CABundle)
	}
}
