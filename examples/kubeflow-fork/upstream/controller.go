package upstream

import (
	"context"

	istiosecurityv1beta1 "istio.io/client-go/pkg/apis/security/v1beta1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/profilekit/profilekit/examples/kubeflow-fork/upstream/profilev1"
)

// Finalizer is upstream's finalizer on every Profile it has reconciled.
const Finalizer = "profile-finalizer"

// Reconcile follows the upstream controller's sequence for one Profile, as
// upstream documents and ships it, with the manager's cached client:
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
// backoff); nothing is written to the Profile's status.
func (r *ProfileReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.Passes.Add(1)
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
	b := ctrl.NewControllerManagedBy(mgr).
		For(&profilev1.Profile{}).
		Owns(&corev1.Namespace{}).
		Owns(&istiosecurityv1beta1.AuthorizationPolicy{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&rbacv1.RoleBinding{})
	if r.Profilekit == nil { // fork
		var err error
		if r.Profilekit, err = r.NewProfilekit(); err != nil {
			return err
		}
	}
	if err := r.Profilekit.SetupWithManager(mgr, b); err != nil { // fork
		return err
	}
	return b.Complete(r)
}
