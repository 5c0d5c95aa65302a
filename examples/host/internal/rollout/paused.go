package rollout

// This file holds the RolloutPaused condition on the Profiles whose failure
// paused a rollout.

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

const (
	// ConditionRolloutPaused is True on the Profiles whose failure with
	// the configuration being rolled out paused the rollout.
	ConditionRolloutPaused = "RolloutPaused"
	// ReasonRolloutPaused is the reason of that condition and of the
	// Warning Event on those Profiles.
	ReasonRolloutPaused = "RolloutPaused"
)

// setPaused sets (c) or removes (nil) the RolloutPaused condition of the
// Profile name, reading it afresh on a conflict.
func (r *Rollout) setPaused(ctx context.Context, name string, c *kubeflowv1.ProfileCondition) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p kubeflowv1.Profile
		if err := r.reader.Get(ctx, types.NamespacedName{Name: name}, &p); err != nil {
			return err
		}
		var conds []kubeflowv1.ProfileCondition
		for _, have := range p.Status.Conditions {
			if have.Type != ConditionRolloutPaused {
				conds = append(conds, have)
			}
		}
		if c != nil {
			conds = append(conds, *c)
		} else if len(conds) == len(p.Status.Conditions) {
			return nil
		}
		p.Status.Conditions = conds
		return r.client.Status().Update(ctx, &p)
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("set %s on Profile %s: %w", ConditionRolloutPaused, name, err)
	}
	return nil
}

// clearPaused takes the RolloutPaused condition off the Profiles that show
// it, once the rollout no longer stands still.
func (r *Rollout) clearPaused(ctx context.Context) error {
	var list kubeflowv1.ProfileList
	if err := r.client.List(ctx, &list); err != nil {
		return fmt.Errorf("list Profiles: %w", err)
	}
	for i := range list.Items {
		p := &list.Items[i]
		if !r.cfg.InShard(p.Labels) || plugins.FindCondition(p.Status.Conditions, ConditionRolloutPaused) == nil {
			continue
		}
		if err := r.setPaused(ctx, p.Name, nil); err != nil {
			return err
		}
	}
	return nil
}
