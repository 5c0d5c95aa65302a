package render

// This file holds a Renderer that runs the plugins against a live cluster
// (WithCluster), as the diff command does: the same decisions as run
// (which plugins apply, which are revoked, which are paused), each pass
// with what the Cluster gives it.

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/plugins"
)

// Pass is what one plugin's pass on one Profile reads and writes through.
type Pass struct {
	// Client is the request's Client and Live reader.
	Client plugins.Cluster
	// Objects is the request's Objects.
	Objects plugins.Objects
	// Outside is the request's Outside.
	Outside plugins.Outside
}

// Cluster gives the passes of a Renderer that runs against a cluster what
// they read and write through. Pass is called for every plugin's pass on a
// Profile, from several goroutines when Check is.
type Cluster interface {
	// Pass returns what the pass of def, as the host runs it
	// (Definition.ForHost), on p runs with.
	Pass(def plugins.Definition, sec hostconfig.Plugin, p *kubeflowv1.Profile) Pass
}

// WithCluster makes r run every plugin against a cluster, as run would on
// its next pass: each pass reads and writes through what c gives it, a
// plugin that no longer applies to a Profile which shows it was there (its
// condition or finalizer) is revoked, a paused plugin and a Profile being
// deleted are left alone, and a missing replicate source is the error
// run's condition would report. Outcomes then hold no objects: the Cluster
// has seen what each pass would write.
func (r *Renderer) WithCluster(c Cluster) *Renderer {
	r.cluster = c
	return r
}

// leftOn reports whether p shows that def's plugin was there: its
// condition or its finalizer, as the host tells a Profile to revoke.
// Offline, Profiles are never revoked.
func (r *Renderer) leftOn(def plugins.Definition, p *kubeflowv1.Profile) bool {
	if r.cluster == nil {
		return false
	}
	fin := def.Finalizer()
	return fin != "" && controllerutil.ContainsFinalizer(p, fin) || plugins.FindCondition(p.Status.Conditions, def.Condition()) != nil
}

// revoke runs def's Revoke on p against the cluster, with the host's
// defaults, as run does for a plugin that no longer applies.
func (r *Renderer) revoke(ctx context.Context, def plugins.Definition, sec hostconfig.Plugin, p *kubeflowv1.Profile) Outcome {
	out := Outcome{Kind: def.Kind(), Condition: def.Condition(), Revoke: true}
	cfg, err := def.DecodeHostDefaults(sec.Defaults)
	if err == nil {
		def, _, err = r.forHost(def, sec)
	}
	if err == nil {
		err = r.livePass(ctx, def, sec, p, cfg, true)
	}
	out.Err = err
	return out
}

// livePass runs def's Apply, or its Revoke, on p with what the Cluster
// gives the pass.
func (r *Renderer) livePass(ctx context.Context, def plugins.Definition, sec hostconfig.Plugin, p *kubeflowv1.Profile, cfg any, revoke bool) error {
	pass := r.cluster.Pass(def, sec, p)
	req := plugins.Request{
		Profile:   p,
		Config:    cfg,
		Client:    pass.Client,
		Objects:   pass.Objects,
		Outside:   pass.Outside,
		Retention: sec.Retention,
		Live:      pass.Client,
	}
	var err error
	if revoke {
		_, err = def.Plugin.Revoke(ctx, req)
	} else {
		_, err = def.Plugin.Apply(ctx, req)
	}
	return err
}
