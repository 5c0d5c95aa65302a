package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// records makes the namespace that holds the plugins' outside-state records
// when it is missing, moves the records that earlier versions kept in
// the Profiles' namespaces into it (outside.MigrateRecords) when the host may
// list and delete ConfigMaps there (see mayMove), and holds the
// name of every Profile of the host's cache that a record names and no
// tenure holds yet for its owner (see seedTenures), once, on the leader. It tries again with backoff until both are done or the host
// stops: a pass that runs before then finds no record in the host's
// namespace and makes its outside state true again (idempotent calls), and
// the records it moves are swept by the Profiles' next passes.
type records struct {
	client    client.Client
	reader    client.Reader
	namespace string
}

var _ manager.LeaderElectionRunnable = records{}

// NeedLeaderElection reports true: only the leader writes.
func (records) NeedLeaderElection() bool { return true }

// Start runs until the records are in place or ctx ends.
func (m records) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithValues("namespace", m.namespace)
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: 2 * time.Minute}
	moveDone := false
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		if err := m.ensureNamespace(ctx); err != nil {
			logger.Error(err, "outside-state records: will try again")
			return false, nil
		}
		if !moveDone {
			may, err := m.mayMove(ctx)
			if err != nil {
				logger.Error(err, "outside-state records: will try again")
				return false, nil
			}
			moved := 0
			if may {
				moved, err = outside.MigrateRecords(ctx, m.reader, m.client, m.namespace)
			} else {
				logger.Info("outside-state records that earlier versions kept in the Profiles' namespaces are not looked for: the host may not list and delete ConfigMaps " +
					"in every namespace; grant it that for the first start after upgrading from such a version (CHANGELOG)")
			}
			if err != nil {
				logger.Error(err, "outside-state records: move from the Profiles' namespaces; will try again", "moved", moved)
				return false, nil
			}
			if moved > 0 {
				logger.Info("outside-state records moved out of the Profiles' namespaces", "moved", moved)
			}
			moveDone = true
		}
		held, err := m.seedTenures(ctx)
		if err != nil {
			logger.Error(err, "tenures of the Profiles' names: will try again", "taken", held)
			return false, nil
		}
		if held > 0 {
			logger.Info("names of existing Profiles held for their owners", "taken", held)
		}
		return true, nil
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("outside-state records: %w", err)
	}
	return nil
}

// seedTenures holds the names of the Profiles in the host's cache that an
// outside-state record names and no tenure holds yet for their owner.
// Only such a name needs holding: a pass of a plugin with outside state
// holds its Profile's name before it makes anything, so the records without
// a tenure are those of earlier versions, and a Profile with none is held
// by its first such pass. On the first start after an upgrade, one write
// per Profile with a record; on later starts two lists and no write, however
// many Profiles came since.
func (m records) seedTenures(ctx context.Context) (int, error) {
	var recs corev1.ConfigMapList
	if err := m.reader.List(ctx, &recs, client.InNamespace(m.namespace),
		client.MatchingLabels{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelRole: plugins.RoleOutsideState}); err != nil {
		return 0, fmt.Errorf("list outside-state records: %w", err)
	}
	recorded := make(map[types.UID]bool, len(recs.Items))
	for _, r := range recs.Items {
		// Every record is owned by its Profile (outside.Outside.Flush).
		for _, ref := range r.OwnerReferences {
			recorded[ref.UID] = true
		}
	}
	if len(recorded) == 0 {
		return 0, nil
	}
	var profiles kubeflowv1.ProfileList
	if err := m.client.List(ctx, &profiles); err != nil {
		return 0, fmt.Errorf("list Profiles: %w", err)
	}
	made := slices.DeleteFunc(profiles.Items, func(p kubeflowv1.Profile) bool { return !recorded[p.UID] })
	return outside.Tenures{Reader: m.reader, Live: m.reader, Writer: m.client, Namespace: m.namespace}.Seed(ctx, made)
}

// mayMove reports whether the host may list and delete ConfigMaps in every
// namespace, which moving the records of earlier versions out of the
// Profiles' namespaces takes. A deployment grants that only where a plugin
// writes ConfigMaps there (replicate), or for the first start after an
// upgrade from such a version. The host asks (a SelfSubjectAccessReview,
// which every user may send) rather than tries, so that a host without the
// rights sends no request that is refused.
func (m records) mayMove(ctx context.Context) (bool, error) {
	for _, verb := range []string{"list", "delete"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Version: "v1", Resource: "configmaps"}}}
		if err := m.client.Create(ctx, review); err != nil {
			return false, fmt.Errorf("may the host %s ConfigMaps in every namespace: %w", verb, err)
		}
		if !review.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}

// ensureNamespace makes the records' namespace when the API server does
// not have it. A host not allowed to read namespaces takes it as made (the
// deployment's manifests make it).
func (m records) ensureNamespace(ctx context.Context) error {
	var ns corev1.Namespace
	err := m.reader.Get(ctx, client.ObjectKey{Name: m.namespace}, &ns)
	switch {
	case err == nil || apierrors.IsForbidden(err):
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("read namespace %s: %w", m.namespace, err)
	}
	ns = corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.namespace, Labels: map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue}}}
	if err := m.client.Create(ctx, &ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", m.namespace, err)
	}
	return nil
}
