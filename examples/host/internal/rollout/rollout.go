// Package rollout brings a change of the host's plugin sections to the
// Profiles in batches, as the host's rollout settings say.
//
// The host keeps the last configuration every Profile had (stable) and the
// one being rolled out (candidate) in the ConfigMap profilekit-rollout in
// its namespace. A Profile gets the candidate once its batch is reached, or
// at once when it was created after the rollout began; the others keep the
// stable one, drift repair included. Profiles go in the order of a hash of
// their UID, so that a restart continues where the rollout was. A batch
// starts when every Profile of the last one has been Ready with the
// candidate for minReady; a failure of a batch's Profile with the candidate
// pauses the rollout (pauseOnFailure) until the configuration changes: back
// to the stable one (a roll back) or to a new candidate (which starts again
// from the first batch).
package rollout

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/reconcilers"
)

// Rollout runs a host's staged rollouts. It chooses each Profile's
// configuration for the plugins' reconcilers (reconcilers.Staged) and, on
// the leader, moves the rollout on.
type Rollout struct {
	spec      *hostconfig.Rollout
	cfg       *hostconfig.Config
	namespace string
	// sections are the configuration file's plugin sections, the candidate
	// of a rollout; changed the kinds whose sections differ from the
	// stable ones.
	sections map[string]hostconfig.Plugin
	changed  []string
	// conditions are the changed kinds' condition types.
	conditions map[string]string

	client   client.Client
	reader   client.Reader
	recorder events.EventRecorder
	logger   logr.Logger

	mu    sync.RWMutex
	state State
	// observed is what the changed plugins' last passes over each Profile
	// set, by Profile UID and kind.
	observed map[types.UID]map[string]observation
	wakes    []chan event.GenericEvent
	// readySince is when every Profile of the last batch was first seen
	// Ready, zero while one is not.
	readySince time.Time
	// marked are the Profiles given the RolloutPaused condition and Event
	// since the state last changed.
	marked map[types.UID]bool
}

// observation is what one pass set.
type observation struct {
	candidate bool
	status    string
	message   string
}

var _ reconcilers.Staged = (*Rollout)(nil)

// Prepare reads the rollout's state with reader and decides what the host
// starts with (see Begin). During a rollout it sets cfg.Staging, so that
// the plugins' reconcilers made from cfg serve both configurations. It
// returns nil when cfg has no rollout settings: the host then applies a
// new configuration to every Profile at once.
func Prepare(ctx context.Context, reader client.Reader, cfg *hostconfig.Config, reg *plugins.Registry) (*Rollout, error) {
	if cfg.Rollout == nil {
		return nil, nil
	}
	ns := cfg.HostNamespace()
	if ns == "" {
		return nil, fmt.Errorf("rollout: the host has no namespace to keep its state in; set leaderElection.namespace")
	}
	kept, err := read(ctx, reader, ns)
	if err != nil {
		return nil, err
	}
	r := &Rollout{
		spec:       cfg.Rollout,
		cfg:        cfg,
		namespace:  ns,
		sections:   cfg.Plugins,
		conditions: map[string]string{},
		observed:   map[types.UID]map[string]observation{},
		marked:     map[types.UID]bool{},
		state:      Begin(kept, cfg.Plugins, time.Now()),
	}
	if r.state.Active() {
		r.changed = hostconfig.Changed(r.state.Stable, cfg.Plugins)
		for _, kind := range r.changed {
			if def, ok := reg.Get(kind); ok {
				r.conditions[kind] = def.Condition()
			}
		}
		cfg.Staging = &hostconfig.Staging{Stable: r.state.Stable, Chooser: r}
	}
	return r, nil
}

// read returns the state kept in the host's namespace ns, nil when there
// is none.
func read(ctx context.Context, reader client.Reader, ns string) (*State, error) {
	var cm corev1.ConfigMap
	err := reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: ConfigMapName}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("rollout: read ConfigMap %s/%s: %w", ns, ConfigMapName, err)
	}
	kept, err := decode(&cm)
	if err != nil {
		return nil, fmt.Errorf("rollout: ConfigMap %s/%s: %w; delete it to make the current configuration stable", ns, ConfigMapName, err)
	}
	return kept, nil
}

// Add runs the rollout with mgr, on the leader only. A nil Rollout adds
// nothing.
func (r *Rollout) Add(mgr manager.Manager) error {
	if r == nil {
		return nil
	}
	r.client = mgr.GetClient()
	r.reader = mgr.GetAPIReader()
	r.recorder = mgr.GetEventRecorder("profilekit-rollout")
	r.logger = mgr.GetLogger().WithName("rollout")
	if err := mgr.Add(r); err != nil {
		return fmt.Errorf("add the rollout: %w", err)
	}
	return nil
}

// NeedLeaderElection makes the rollout move on the leader only.
func (*Rollout) NeedLeaderElection() bool { return true }

// Candidate reports whether p gets the configuration being rolled out.
func (r *Rollout) Candidate(p *kubeflowv1.Profile) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.state.Updated(Key(p.UID), p.CreationTimestamp.Time)
}

// Observe keeps what a changed plugin's pass set on p.
func (r *Rollout) Observe(kind string, p *kubeflowv1.Profile, candidate bool, c *kubeflowv1.ProfileCondition) {
	o := observation{candidate: candidate}
	if c != nil {
		o.status, o.message = c.Status, c.Message
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.observed[p.UID] == nil {
		r.observed[p.UID] = map[string]observation{}
	}
	r.observed[p.UID][kind] = o
}

// Wakes returns a new channel on which the rollout sends the Profiles of
// each batch it starts.
func (r *Rollout) Wakes() <-chan event.GenericEvent {
	ch := make(chan event.GenericEvent, 4096)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wakes = append(r.wakes, ch)
	return ch
}

// State returns where the rollout stands.
func (r *Rollout) State() State {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.state
}
