package reconcilers

// This file holds staged rollouts: a Reconciler that serves some Profiles
// with a host's last fully rolled-out settings of the plugin and the others
// with new ones, as a Staged chooses.

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// Settings is what one host configuration says of a plugin for each
// Profile: which Profiles it serves, with which defaults, and what Revoke
// does with user data.
type Settings struct {
	// Off serves no Profile, listed or not.
	Off bool
	// EnabledForAll serves every Profile whose labels match Selector (nil
	// for every Profile), besides those that list the plugin.
	EnabledForAll bool
	Selector      labels.Selector
	// Defaults are the host's defaults of the plugin's config, as JSON.
	Defaults []byte
	// Retention is what Revoke does with user data; empty means Retain.
	Retention plugins.Retention
}

// Staged chooses, during a staged rollout of a host's configuration, which
// Profiles a Reconciler serves with the candidate Settings and which with
// the stable ones, and hears how each pass ended.
type Staged interface {
	// Candidate reports whether p gets the candidate settings.
	Candidate(p *kubeflowv1.Profile) bool
	// Observe is told each condition a pass sets on p (nil when the plugin
	// let p go), and whether the pass ran with the candidate settings.
	Observe(kind string, p *kubeflowv1.Profile, candidate bool, c *kubeflowv1.ProfileCondition)
	// Wakes returns a channel on which the Staged sends the Profiles whose
	// settings it changed; each Reconciler calls it once.
	Wakes() <-chan event.GenericEvent
}

// WithStaged serves each Profile with the stable or the candidate settings,
// as s chooses; they replace WithDefaults, WithEnabledForAll and
// WithRetention for the Profile's passes. What the Reconciler derives from
// its host config once (the kinds it owns, its watches' scopes) comes from
// the options.
func WithStaged(stable, candidate Settings, s Staged) Option {
	return func(r *Reconciler) { r.staged = &staging{stable: stable, candidate: candidate, chooser: s} }
}

// staging holds both settings of a Reconciler under a staged rollout.
type staging struct {
	stable, candidate Settings
	chooser           Staged
	// decoded are the settings' host configs, decoded in New.
	stableConfig, candidateConfig any
}

// settings is what a pass over one Profile runs with.
type settings struct {
	Settings
	hostConfig any
	// staged is set under a staged rollout; candidate then says which.
	staged, candidate bool
}

// decodeStaged decodes both settings' defaults, so that a host whose
// stable settings no longer decode does not start.
func (r *Reconciler) decodeStaged() error {
	if r.staged == nil {
		return nil
	}
	var err error
	if r.staged.stableConfig, err = r.def.DecodeHostDefaults(r.staged.stable.Defaults); err != nil {
		return fmt.Errorf("stable settings: %w", err)
	}
	if r.staged.candidateConfig, err = r.def.DecodeHostDefaults(r.staged.candidate.Defaults); err != nil {
		return fmt.Errorf("candidate settings: %w", err)
	}
	return nil
}

// settingsFor returns the settings p is served with now.
func (r *Reconciler) settingsFor(p *kubeflowv1.Profile) settings {
	if r.staged == nil {
		return settings{Settings: Settings{EnabledForAll: r.enabledForAll, Selector: r.selector, Defaults: r.defaults, Retention: r.retention}, hostConfig: r.hostConfig}
	}
	if r.staged.chooser.Candidate(p) {
		return settings{Settings: r.staged.candidate, hostConfig: r.staged.candidateConfig, staged: true, candidate: true}
	}
	return settings{Settings: r.staged.stable, hostConfig: r.staged.stableConfig, staged: true}
}

type settingsKey struct{}

// settingsIn returns the settings the pass chose when it began, so that a
// rollout moving on mid-pass does not mix two configurations in one pass.
func (r *Reconciler) settingsIn(ctx context.Context, p *kubeflowv1.Profile) settings {
	if s, ok := ctx.Value(settingsKey{}).(settings); ok {
		return s
	}
	return r.settingsFor(p)
}

// applies reports whether a plugin with settings s serves p.
func (s settings) applies(kind string, p *kubeflowv1.Profile) bool {
	switch {
	case s.Off:
		return false
	case plugins.Listed(p, kind):
		return true
	}
	return s.EnabledForAll && (s.Selector == nil || s.Selector.Matches(labels.Set(p.Labels)))
}

// observe tells the rollout what condition a pass set.
func (r *Reconciler) observe(ctx context.Context, p *kubeflowv1.Profile, c *kubeflowv1.ProfileCondition) {
	if r.staged == nil {
		return
	}
	if s, ok := ctx.Value(settingsKey{}).(settings); ok && s.staged {
		r.staged.chooser.Observe(r.def.Kind(), p, s.candidate, c)
	}
}

// stagedSource enqueues the Profiles whose settings the rollout changed.
func (r *Reconciler) stagedSource() source.Source {
	return source.Channel(r.staged.chooser.Wakes(), r.wakes.enqueued(triggerRollout, &handler.EnqueueRequestForObject{}))
}
