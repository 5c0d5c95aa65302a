// Package upstream stands in for the upstream Kubeflow profile controller's
// controllers package, with exactly its plugin shapes and its reconcile
// sequence: the Plugin interface, a ProfileReconciler that embeds
// client.Client beside a Scheme field (which hides the client's Scheme
// method), plugin selection by a switch on kind followed by json.Unmarshal
// of the spec into the plugin, and Reconcile and SetupWithManager as
// upstream ships them (see Reconcile).
//
// Its files are named after upstream's (controllers/profile_controller.go
// and main.go), and hold the lines examples/kubeflow-fork/README.md tells a
// fork to add, marked "fork"; a test checks that they are the README's.
package upstream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-logr/logr"
	istiosecurityv1beta1 "istio.io/client-go/pkg/apis/security/v1beta1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/profilekit/profilekit/examples/kubeflow-fork/upstream/profilev1"
	"github.com/profilekit/profilekit/plugins/azureidentity"
	"github.com/profilekit/profilekit/plugins/irsa"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/plugins/workloadidentity"
	"github.com/profilekit/profilekit/reconcilers"
)

// Finalizer is upstream's finalizer on every Profile it has reconciled.
const Finalizer = "profile-finalizer"

// Plugin is upstream's plugin interface.
type Plugin interface {
	// ApplyPlugin is called when the Profile is created or updated.
	ApplyPlugin(*ProfileReconciler, *profilev1.Profile) error
	// RevokePlugin is called when the Profile is deleted.
	RevokePlugin(*ProfileReconciler, *profilev1.Profile) error
}

// ProfileReconciler has upstream's fields.
type ProfileReconciler struct {
	client.Client
	Scheme                     *runtime.Scheme
	Log                        logr.Logger
	UserIdHeader               string
	UserIdPrefix               string
	WorkloadIdentity           string
	DefaultNamespaceLabelsPath string

	// Profilekit serves the fork's profilekit plugins (fork).
	Profilekit *Profilekit

	// The cloud IAM clients of the identity plugins, such as
	// irsa.DefaultIAM(), and their host defaults: the identities the
	// platform allows Profiles (allowedIdentities), and the Azure plugin's
	// OIDC issuer (fork); tests put mocks here.
	AWSIAM           irsa.IAM
	GCPIAM           workloadidentity.IAM
	AzureCredentials azureidentity.Credentials
	AWSDefaults      []byte
	GCPDefaults      []byte
	AzureDefaults    []byte
}

// Profilekit is the type of the fork's profilekit plugins (fork).
type Profilekit = reconcilers.Fork[*ProfileReconciler, *profilev1.Profile]

var _ Plugin = (*Profilekit)(nil)

// NewProfilekit returns the fork's profilekit plugins, with their host
// defaults (fork).
func (r *ProfileReconciler) NewProfilekit() (*Profilekit, error) {
	return reconcilers.NewFork(
		reconcilers.NewAdapter[*ProfileReconciler, *profilev1.Profile](quotas.Definition(), reconcilers.AdapterDefaults([]byte(`{"hard":{"limits.cpu":"16"}}`))),
		reconcilers.NewAdapter[*ProfileReconciler, *profilev1.Profile](limitrange.Definition()),
		reconcilers.NewAdapter[*ProfileReconciler, *profilev1.Profile](workloadidentity.Definition(r.GCPIAM), reconcilers.AdapterDefaults(r.workloadIdentityDefaults())),
		reconcilers.NewAdapter[*ProfileReconciler, *profilev1.Profile](irsa.Definition(r.AWSIAM), reconcilers.AdapterDefaults(r.AWSDefaults)),
		reconcilers.NewAdapter[*ProfileReconciler, *profilev1.Profile](azureidentity.Definition(r.AzureCredentials), reconcilers.AdapterDefaults(r.AzureDefaults)),
	)
}

// workloadIdentityDefaults turns upstream's -workload-identity flag into
// host defaults of profilekit's WorkloadIdentity plugin, beside
// GCPDefaults: the account every Profile acts as, which the platform's flag
// allows them all to share (fork).
func (r *ProfileReconciler) workloadIdentityDefaults() []byte {
	if r.WorkloadIdentity == "" {
		return r.GCPDefaults
	}
	defaults := map[string]any{}
	if len(r.GCPDefaults) > 0 {
		_ = json.Unmarshal(r.GCPDefaults, &defaults)
	}
	allowed, _ := defaults["allowedIdentities"].([]any)
	defaults["gcpServiceAccount"] = r.WorkloadIdentity
	defaults["allowedIdentities"] = append(allowed, map[string]any{"identity": r.WorkloadIdentity, "shared": true})
	data, _ := json.Marshal(defaults)
	return data
}

// Reconcile follows the upstream controller's sequence for one Profile, as
// upstream ships it, with the manager's cached client:
//
//  1. read the Profile; make its namespace, owned by the Profile, when it
//     is missing (upstream also writes its RBAC, service accounts and
//     authorization policy here, which no plugin depends on);
//  2. update the Profile, as upstream's PatchDefaultPluginSpec does on every
//     pass;
//  3. call ApplyPlugin on every plugin GetPluginSpec returns, on every pass,
//     the Profile's deletion included, and return at the first error;
//  4. when the Profile is not being deleted, add profile-finalizer once all
//     plugins applied; when it is, call RevokePlugin on every plugin,
//     return at the first error, then remove profile-finalizer.
//
// Errors are logged and returned (the controller retries them with
// backoff); upstream writes nothing to the Profile's status here.
func (r *ProfileReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := r.Log.WithValues("profile", req.Name)
	var profile profilev1.Profile
	if err := r.Get(ctx, req.NamespacedName, &profile); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.ensureNamespace(ctx, &profile); err != nil {
		logger.Error(err, "error making the namespace")
		return ctrl.Result{}, err
	}
	if err := r.Update(ctx, &profile); err != nil {
		logger.Error(err, "error patching the default plugin spec")
		return ctrl.Result{}, err
	}
	if ps, err := r.GetPluginSpec(&profile); err == nil {
		for _, p := range ps {
			if err := p.ApplyPlugin(r, &profile); err != nil {
				logger.Error(err, "error applying plugin")
				return ctrl.Result{}, err
			}
		}
	}
	if profile.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(&profile, Finalizer) {
			controllerutil.AddFinalizer(&profile, Finalizer)
			if err := r.Update(ctx, &profile); err != nil {
				logger.Error(err, "error adding the finalizer")
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{}, nil
	}
	if !controllerutil.ContainsFinalizer(&profile, Finalizer) {
		return ctrl.Result{}, nil
	}
	if ps, err := r.GetPluginSpec(&profile); err == nil {
		for _, p := range ps {
			if err := p.RevokePlugin(r, &profile); err != nil {
				logger.Error(err, "error revoking plugin")
				return ctrl.Result{}, err
			}
		}
	}
	controllerutil.RemoveFinalizer(&profile, Finalizer)
	if err := r.Update(ctx, &profile); err != nil {
		logger.Error(err, "error removing the finalizer")
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// ensureNamespace makes the Profile's namespace, named after it and owned by
// it, when there is none.
func (r *ProfileReconciler) ensureNamespace(ctx context.Context, profile *profilev1.Profile) error {
	var ns corev1.Namespace
	err := r.Get(ctx, types.NamespacedName{Name: profile.Name}, &ns)
	if !apierrors.IsNotFound(err) {
		return err
	}
	ns = corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        profile.Name,
		Annotations: map[string]string{"owner": profile.Spec.Owner.Name},
	}}
	if err := controllerutil.SetControllerReference(profile, &ns, r.Scheme); err != nil {
		return err
	}
	return client.IgnoreAlreadyExists(r.Create(ctx, &ns))
}

// SetupWithManager watches what upstream watches: Profiles, and the kinds
// upstream itself writes, through their controller reference. (Upstream
// also watches its namespace-labels file, which the stand-in has not.) The
// fork's lines set up its profilekit plugins with the manager, which adds
// watches on their own objects.
func (r *ProfileReconciler) SetupWithManager(mgr ctrl.Manager) error {
	c := ctrl.NewControllerManagedBy(mgr).
		For(&profilev1.Profile{}).
		Owns(&corev1.Namespace{}).
		Owns(&istiosecurityv1beta1.AuthorizationPolicy{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&rbacv1.RoleBinding{})
	if r.Profilekit == nil {
		profilekit, err := r.NewProfilekit()
		if err != nil {
			return err
		}
		r.Profilekit = profilekit
	}
	if err := r.Profilekit.SetupWithManager(mgr, c); err != nil {
		return err
	}
	return c.Complete(r)
}

// GetPluginSpec picks a plugin per spec.plugins entry, as upstream does; the
// fork's profilekit plugins serve their own entries, and come last.
func (r *ProfileReconciler) GetPluginSpec(profileIns *profilev1.Profile) ([]Plugin, error) {
	plugins := []Plugin{}
	for _, p := range profileIns.Spec.Plugins {
		if r.Profilekit.Serves(p.Kind) {
			continue
		}
		pluginIns := ownPlugin(p.Kind)
		if pluginIns == nil {
			r.Log.Info("unknown plugin kind", "kind", p.Kind)
			continue
		}
		if p.Spec != nil {
			if err := json.Unmarshal(p.Spec.Raw, pluginIns); err != nil {
				return nil, fmt.Errorf("plugin %s: %w", p.Kind, err)
			}
		}
		plugins = append(plugins, pluginIns)
	}
	return append(plugins, r.Profilekit), nil
}

// ownPlugin returns a new plugin of upstream's own of kind, or nil, as
// upstream's switch on kind does. The stand-in has none of upstream's own:
// those are upstream's code.
func ownPlugin(string) Plugin { return nil }
