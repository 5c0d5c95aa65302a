package gitea

// This file holds where the host keeps each role's password: a Secret of
// its own, beside the administrator's DSN of the instance's server, which
// no tenant can write. The database Secret in the Profile's namespace is
// written from it and never read back, but once, to carry an existing
// install's password over (see firstPassword).

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// HeldSecretName returns the name of the Secret in which the host keeps the
// password of instance's role for the Profile of UID uid. It lives in the
// namespace of the instance's adminDSN Secret. The UID, not the Profile's
// name, keys it: a later Profile of the name never finds it.
func HeldSecretName(instance string, p *kubeflowv1.Profile) string {
	return "gitea-" + instance + "-db-" + string(p.UID)
}

// heldKey is where the host keeps the password of in's role for p.
func (in Instance) heldKey(p *kubeflowv1.Profile) client.ObjectKey {
	return client.ObjectKey{Namespace: in.Database.AdminDSN.Namespace, Name: HeldSecretName(in.Name, p)}
}

// heldPassword returns the password the host keeps for in's role, "" when
// it keeps none yet. It reads the host's cache, and the API server when the
// cache has none, so that a Secret written a moment before is never taken
// for a missing one (which would give the role a new password).
func heldPassword(ctx context.Context, req plugins.Request, in Instance) (string, error) {
	k := in.heldKey(req.Profile)
	if k.Namespace == plugins.Namespace(req.Profile) {
		return "", plugins.Terminalf(plugins.ReasonInvalidConfig,
			"instance %s: the adminDSN Secret is in the Profile's namespace %s, where its tenant can write; the host keeps the role's password beside it, so it must be in a namespace of the platform's", in.Name, k.Namespace)
	}
	for _, r := range []client.Reader{req.Client, req.LiveReader()} {
		var s corev1.Secret
		err := r.Get(ctx, k, &s)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("read Secret %s: %w", k, err)
		}
		if !plugins.IsOwnedBy(s.Labels, Kind, req.Profile.Name) || s.Labels[plugins.LabelRole] != plugins.RoleOutsideState {
			return "", plugins.Terminalf(plugins.ReasonConflict, "Secret %s exists and is not the password profilekit keeps for profile %s; left untouched", k, req.Profile.Name)
		}
		return string(s.Data[KeyPassword]), nil
	}
	return "", nil
}

// holdPassword writes the Secret in which the host keeps password for in's
// role, and returns the password it holds: password, or the one a pass
// wrote first. The Secret carries the plugin's labels with the role of
// outside state, which the Applier never prunes, and an owner reference to
// the Profile: the garbage collector removes it with the Profile.
func holdPassword(ctx context.Context, req plugins.Request, in Instance, password string) (string, error) {
	k := in.heldKey(req.Profile)
	labels := plugins.OwnershipLabels(Kind, req.Profile.Name)
	labels[plugins.LabelRole] = plugins.RoleOutsideState
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: k.Namespace, Name: k.Name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: kubeflowv1.GroupVersion.String(), Kind: "Profile",
				Name: req.Profile.Name, UID: req.Profile.UID, BlockOwnerDeletion: ptr.To(false),
			}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{KeyPassword: []byte(password)},
	}
	err := req.Client.Create(ctx, s)
	if apierrors.IsAlreadyExists(err) {
		held, err := heldPassword(ctx, req, in)
		if err == nil && held == "" {
			err = fmt.Errorf("Secret %s exists but cannot be read yet; will look again", k)
		}
		return held, err
	}
	if err != nil {
		return "", fmt.Errorf("write Secret %s: %w", k, err)
	}
	return password, nil
}

// dropHeld deletes the Secret in which the host keeps the password of in's
// role, once the role is dropped.
func dropHeld(ctx context.Context, req plugins.Request, in Instance) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: in.heldKey(req.Profile).Namespace, Name: in.heldKey(req.Profile).Name}}
	if err := client.IgnoreNotFound(req.Client.Delete(ctx, s)); err != nil {
		return fmt.Errorf("delete Secret %s: %w", client.ObjectKeyFromObject(s), err)
	}
	return nil
}

// firstPassword decides the password the host will keep for a role when it
// keeps none yet: a new one, unless the role exists, carries the plugin's
// proof for the Profile, and the password of the database Secret in the
// Profile's namespace (tenant's, written by an earlier version) logs in as
// it: that password is then kept as it is, so that an install's running
// Gitea goes on. It is taken as a value only, never as a proof: without the
// proof the role is a Conflict (or, with adoption, gets a new password).
// Anything under spec's names that is not the plugin's is a Conflict, and
// nothing is decided. It writes nothing.
func (w work) firstPassword(ctx context.Context, o plugins.Outside, spec DatabaseSpec, tenants string) (string, error) {
	var cat Catalog
	if err := o.Call(ctx, SystemPostgreSQL, func(ctx context.Context) error {
		var err error
		cat, err = w.server.Inspect(ctx, spec)
		return err
	}); err != nil {
		return "", err
	}
	if _, err := planEnsure(cat, spec); err != nil {
		return "", err
	}
	if cat.Role != nil && spec.proves(cat.Role.Comment) && tenants != "" {
		var in bool
		if err := o.Call(ctx, SystemPostgreSQL, func(ctx context.Context) error {
			var err error
			in, err = w.server.Connector.LogsIn(ctx, spec.Role, tenants, loginDatabase(cat, spec))
			return err
		}); err != nil {
			return "", err
		}
		if in {
			return tenants, nil
		}
	}
	return NewPassword()
}
