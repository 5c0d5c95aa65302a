package main

import (
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/profilekit/profilekit/examples/host/builtin"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/plugins"
)

// TestDeployWebhookOverlays builds the two webhook overlays and checks that
// the host configuration, the Deployment, the Service and the
// ValidatingWebhookConfiguration agree, and that each overlay's certificate
// reaches the host.
func TestDeployWebhookOverlays(t *testing.T) {
	reg, err := plugins.NewRegistry(builtin.Definitions()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, overlay := range []string{"webhook-cert-manager", "webhook-self-signed"} {
		t.Run(overlay, func(t *testing.T) {
			objs := kustomize(t, deployDir+"/overlays/"+overlay)
			checkWebhook(t, reg, objs)
			checkSameRBACAsChart(t, objs, deployDir+"/overlays/"+overlay+"/host.yaml")
		})
	}
}

// checkWebhook checks that the host configuration in objs turns the webhook
// on, and that the Deployment, the Service and the
// ValidatingWebhookConfiguration agree with it, and that the certificate
// reaches the host: from cert-manager with certificates: files, or made by
// the host with selfSigned.
func checkWebhook(t *testing.T, reg *plugins.Registry, objs []*unstructured.Unstructured) {
	t.Helper()
	cm := one[corev1.ConfigMap](t, objs, "ConfigMap", "profilekit-config")
	cfg, err := hostconfig.Parse("ConfigMap "+cm.Name+" host.yaml", []byte(cm.Data["host.yaml"]), reg)
	if err != nil {
		t.Fatalf("the ConfigMap does not hold a valid host configuration: %v", err)
	}
	if !cfg.Webhook.Enabled {
		t.Fatal("the configuration does not enable the webhook")
	}

	vwc := one[admissionregistrationv1.ValidatingWebhookConfiguration](t, objs, "ValidatingWebhookConfiguration", "profilekit")
	if len(vwc.Webhooks) != 1 {
		t.Fatalf("webhooks: %+v", vwc.Webhooks)
	}
	wh := vwc.Webhooks[0]
	if wh.FailurePolicy == nil || *wh.FailurePolicy != admissionregistrationv1.Ignore {
		t.Errorf("failurePolicy %v, want Ignore by default", wh.FailurePolicy)
	}
	if wh.SideEffects == nil || *wh.SideEffects != admissionregistrationv1.SideEffectClassNone {
		t.Errorf("sideEffects %v, want None (dry-run requests are then checked too)", wh.SideEffects)
	}
	if len(wh.Rules) != 1 {
		t.Fatalf("rules: %+v", wh.Rules)
	}
	r := wh.Rules[0]
	if !slices.Equal(r.APIGroups, []string{"kubeflow.org"}) || !slices.Equal(r.APIVersions, []string{"v1", "v1beta1"}) ||
		!slices.Equal(r.Resources, []string{"profiles"}) ||
		!slices.Equal(r.Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}) {
		t.Errorf("rule %+v, want CREATE and UPDATE of profiles (not their status) in v1 and v1beta1", r)
	}
	svcRef := wh.ClientConfig.Service
	if svcRef == nil || svcRef.Path == nil || *svcRef.Path != cfg.Webhook.Path || svcRef.Namespace != "profilekit-system" {
		t.Fatalf("client config %+v, want the Service at path %s", wh.ClientConfig, cfg.Webhook.Path)
	}
	svc := one[corev1.Service](t, objs, "Service", svcRef.Name)
	dep := one[appsv1.Deployment](t, objs, "Deployment", "profilekit")
	c := dep.Spec.Template.Spec.Containers[0]
	port := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return svcRef.Port != nil && p.Port == *svcRef.Port })
	if port < 0 {
		t.Fatalf("Service %s has no port %v", svc.Name, svcRef.Port)
	}
	target := svc.Spec.Ports[port].TargetPort.String()
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == target && int(p.ContainerPort) == cfg.Webhook.Port }) {
		t.Errorf("the container has no port %s = %d: %+v", target, cfg.Webhook.Port, c.Ports)
	}
	dnsName := svc.Name + "." + svc.Namespace + ".svc"

	switch cfg.Webhook.Certificates {
	case hostconfig.CertificatesFromFiles:
		if got := vwc.Annotations["cert-manager.io/inject-ca-from"]; got != "profilekit-system/profilekit-webhook" {
			t.Errorf("CA injection annotation %q", got)
		}
		cert := byKind(objs, "Certificate", "profilekit-webhook")
		if cert == nil {
			t.Fatal("no Certificate profilekit-webhook")
		}
		names, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
		secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
		if !slices.Contains(names, dnsName) {
			t.Errorf("Certificate dnsNames %v lack %s", names, dnsName)
		}
		vol := slices.IndexFunc(dep.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == secret })
		if vol < 0 {
			t.Fatalf("the Deployment does not mount Secret %s", secret)
		}
		volName := dep.Spec.Template.Spec.Volumes[vol].Name
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == volName && m.MountPath == cfg.Webhook.CertDir }) {
			t.Errorf("Secret %s is not mounted at webhook.certDir %s: %+v", secret, cfg.Webhook.CertDir, c.VolumeMounts)
		}
	case hostconfig.CertificatesSelfSigned:
		ss := cfg.Webhook.SelfSigned
		if cfg.Webhook.Certificates != hostconfig.CertificatesSelfSigned || !slices.Contains(ss.DNSNames, dnsName) || ss.ConfigurationName != vwc.Name {
			t.Errorf("self-signed settings %+v, want certificates for %s written into %s", cfg.Webhook, dnsName, vwc.Name)
		}
		role := one[rbacv1.Role](t, objs, "Role", "profilekit-webhook-certificate")
		for _, v := range []string{"get", "update"} {
			if !allowsNamed(role.Rules, "", "secrets", v, ss.SecretName) {
				t.Errorf("Role lacks %s on Secret %s", v, ss.SecretName)
			}
		}
		if !allows(role.Rules, "", "secrets", "create") {
			t.Error("Role lacks create on Secrets")
		}
		cr := one[rbacv1.ClusterRole](t, objs, "ClusterRole", "profilekit-webhook-certificate")
		for _, v := range []string{"get", "update"} {
			if !allowsNamed(cr.Rules, "admissionregistration.k8s.io", "validatingwebhookconfigurations", v, vwc.Name) {
				t.Errorf("ClusterRole lacks %s on ValidatingWebhookConfiguration %s", v, vwc.Name)
			}
		}
	}
}

func byKind(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}

func allowsNamed(rules []rbacv1.PolicyRule, group, resource, verb, name string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) &&
			(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, name)) {
			return true
		}
	}
	return false
}
