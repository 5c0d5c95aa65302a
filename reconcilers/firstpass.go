package reconcilers

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// FirstPass tells when a Reconciler has made its first pass over every
// Profile: a host's cluster-wide work that must not decide ahead of the
// Profiles' own passes (the volumes plugin's sweeper of released volumes,
// which must not delete the volume of an owner whose Profile came back while
// the host was down) waits for it. Give it to the Reconciler with
// WithFirstPass; it is safe for concurrent use.
type FirstPass struct {
	mu   sync.Mutex
	seen map[string]bool
}

// NewFirstPass returns a FirstPass that has seen no pass.
func NewFirstPass() *FirstPass { return &FirstPass{seen: map[string]bool{}} }

// WithFirstPass makes the Reconciler tell f of every pass it ends, whatever
// its result.
func WithFirstPass(f *FirstPass) Option {
	return func(r *Reconciler) { r.firstPass = f }
}

// passed records the end of a pass of the Profile of name.
func (f *FirstPass) passed(name string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen[name] = true
}

// Wait returns once a pass of every Profile that r lists when Wait begins
// (the host's cache, which holds the Profiles of its shard) has ended, or
// the Profile is gone; or with ctx's error. A list that fails is tried
// again.
func (f *FirstPass) Wait(ctx context.Context, r client.Reader) error {
	var left []string
	listed := false
	return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if !listed {
			var list kubeflowv1.ProfileList
			if err := r.List(ctx, &list); err != nil {
				log.FromContext(ctx).Error(err, "list Profiles for their first pass; trying again")
				return false, nil
			}
			for _, p := range list.Items {
				left = append(left, p.Name)
			}
			listed = true
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		left = slices.DeleteFunc(left, func(name string) bool { return f.seen[name] })
		return len(left) == 0, nil
	})
}
