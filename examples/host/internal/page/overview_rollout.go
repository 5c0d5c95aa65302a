package page

// This file holds what the overview shows of the staged rollout: the
// leader's ConfigMap, read again every rolloutEvery, and the cached
// Profiles counted as the leader counts them.

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/rollout"
)

// rolloutEvery is how often Start reads the rollout's ConfigMap. It is read
// by name from the API server, not watched: the host may get that one
// ConfigMap, and a watch of it would need list and watch too.
const rolloutEvery = 10 * time.Second

// rolloutState is the rollout's ConfigMap as last read.
type rolloutState struct {
	mu sync.Mutex
	// read is set once a read has answered; cm is nil while the leader
	// has written none; err is the last read's failure.
	read bool
	cm   *corev1.ConfigMap
	err  error
}

// readRollout reads the rollout's ConfigMap with the API reader and keeps
// it; a failure keeps what was read before, and says so.
func (o *Overview) readRollout(ctx context.Context) {
	if o.opts.RolloutNamespace == "" || o.opts.API == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, rolloutEvery)
	defer cancel()
	cm := &corev1.ConfigMap{}
	err := o.opts.API.Get(ctx, client.ObjectKey{Namespace: o.opts.RolloutNamespace, Name: rollout.ConfigMapName}, cm)
	s := &o.rolloutState
	s.mu.Lock()
	defer s.mu.Unlock()
	s.read, s.err = true, nil
	switch {
	case apierrors.IsNotFound(err):
		s.cm = nil
	case err != nil:
		s.err = fmt.Errorf("read ConfigMap %s/%s: %w", o.opts.RolloutNamespace, rollout.ConfigMapName, err)
	default:
		s.cm = cm
	}
}

// rolloutView is where the staged rollout stands.
type rolloutView struct {
	// Configured is false when the host has no rollout settings: a new
	// configuration reaches every Profile at once.
	Configured bool
	// Unread is set until the rollout's state has been read once.
	Unread bool
	// Problem says why the rollout's state could not be read.
	Problem string
	// Written is false until the leader has written the state.
	Written                            bool
	Active, Paused                     bool
	Stable, Candidate, Reason, Summary string
	Batch                              int
	Started                            string
	// Updated of Members: the Profiles that existed when the rollout
	// began and have the candidate; New were created since, and have it
	// too.
	Updated, Members, New int
	// Changed are the plugins whose sections the candidate changes.
	Changed []string
}

// rollout returns where the rollout stands, as its state was last read,
// counting the Profiles as the leader does.
func (o *Overview) rollout(profiles []kubeflowv1.Profile) rolloutView {
	v := rolloutView{Configured: o.opts.RolloutNamespace != ""}
	if !v.Configured {
		return v
	}
	s := &o.rolloutState
	s.mu.Lock()
	read, cm, err := s.read, s.cm, s.err
	s.mu.Unlock()
	switch {
	case !read:
		v.Unread = true
		return v
	case err != nil:
		v.Problem = err.Error()
		return v
	case cm == nil:
		return v
	}
	v.Written = true
	st, err := rollout.Decode(cm)
	if err != nil {
		v.Problem = fmt.Sprintf("ConfigMap %s/%s: %v", cm.Namespace, cm.Name, err)
		return v
	}
	v.Active, v.Paused, v.Reason = st.Active(), st.Active() && st.Paused, st.Reason
	v.Stable, v.Candidate, v.Batch = st.StableRevision, st.CandidateRevision, st.Batches
	for i := range profiles {
		p := &profiles[i]
		created := p.CreationTimestamp.Time
		switch {
		case !p.DeletionTimestamp.IsZero():
		case v.Active && !created.Before(st.Started):
			v.New++
		default:
			v.Members++
			if st.Updated(rollout.Key(p.UID), created) {
				v.Updated++
			}
		}
	}
	v.Summary = st.Summary(v.Updated, v.Members-v.Updated)
	if v.Active {
		v.Started = st.Started.UTC().Format(time.RFC3339)
		v.Changed = hostconfig.Changed(st.Stable, o.opts.Sections)
	}
	return v
}
