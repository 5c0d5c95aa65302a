package server

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/volumes"
	"github.com/profilekit/profilekit/reconcilers"
)

// addSweeper runs the volumes plugin's sweeper of released volumes when the
// plugin is enabled and its defaults set retainFor. The sweeper serves the
// whole cluster, not a Profile, so it runs beside the plugin's controller,
// on the leader only, and its first sweep waits for the plugin's first pass
// over every Profile (first).
func addSweeper(mgr manager.Manager, cfg *hostconfig.Config, def plugins.Definition, first *reconcilers.FirstPass) error {
	sec, on := cfg.Section(volumes.Kind)
	if !on {
		return nil
	}
	c, err := def.DecodeHostDefaults(sec.Defaults)
	if err != nil {
		return err
	}
	vc, ok := c.(*volumes.Config)
	if !ok || vc.RetainFor.Duration <= 0 {
		return nil
	}
	sw := volumes.Sweeper{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Config: vc, Namespace: cfg.HostNamespace(),
		Wait: func(ctx context.Context) error { return first.Wait(ctx, mgr.GetClient()) }}
	if err := mgr.Add(sw); err != nil {
		return fmt.Errorf("plugin %s: add sweeper: %w", volumes.Kind, err)
	}
	return nil
}
