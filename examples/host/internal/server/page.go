package server

import (
	"encoding/json"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/page"
	"github.com/profilekit/profilekit/plugins/apps"
	"github.com/profilekit/profilekit/plugins/budgets"
)

// addPage serves the tenant page and the admin overview from mgr's cache,
// whose kinds in whole are cached whole, and from a cache of every
// RoleBinding's membership annotations that only a host with the page
// keeps (page.NewMembers). SubjectAccessReviews go to the API server
// through mgr's client (creates are never cached). wrap, when set, wraps
// the handler of both.
func addPage(mgr manager.Manager, cfg *hostconfig.Config, whole []schema.GroupVersionKind, wrap func(http.Handler) http.Handler) error {
	pc := cfg.Page
	members, err := page.NewMembers(mgr)
	if err != nil {
		return err
	}
	appsNamespace, err := appsNamespace(cfg)
	if err != nil {
		return err
	}
	h := page.New(mgr.GetClient(), mgr.GetScheme(), page.NewAccess(mgr.GetClient(), pc.TTL(), pc.AccessEntries), page.Options{
		UserIDHeader: pc.UserIDHeader, UserIDPrefix: pc.UserIDPrefix, GroupsHeader: pc.GroupsHeader,
		FrameAncestors: pc.FrameAncestors, Whole: whole, Members: members, AppsNamespace: appsNamespace,
	})
	ov, err := overviewOptions(cfg)
	if err != nil {
		return err
	}
	ov.Elected, ov.API = mgr.Elected(), mgr.GetAPIReader()
	o := page.NewOverview(h, ov)
	var handler http.Handler = page.NewMux(h, o)
	if wrap != nil {
		handler = wrap(handler)
	}
	if err := mgr.Add(page.Server{Address: pc.Address, Handler: handler}); err != nil {
		return fmt.Errorf("add the tenant page: %w", err)
	}
	if err := mgr.Add(o); err != nil {
		return fmt.Errorf("add the admin overview's sampler: %w", err)
	}
	return nil
}

// appsNamespace returns where the apps plugin keeps its Applications when
// the host runs it, else "": the page's apps section reads them from the
// cache the plugin fills.
func appsNamespace(cfg *hostconfig.Config) (string, error) {
	sec, on := cfg.Section(apps.Kind)
	if !on {
		return "", nil
	}
	ac := apps.NewConfig()
	if len(sec.Defaults) > 0 {
		if err := json.Unmarshal(sec.Defaults, ac); err != nil {
			return "", fmt.Errorf("tenant page: apps: %w", err)
		}
	}
	return ac.ApplicationNamespace(), nil
}

// overviewOptions returns what the admin overview shows of cfg: the
// rollout's namespace when it has rollout settings, its plugin sections,
// and the budgets plugin's budgets when it runs.
func overviewOptions(cfg *hostconfig.Config) (page.OverviewOptions, error) {
	o := page.OverviewOptions{GrafanaURL: cfg.Page.Overview.GrafanaURL, Sections: cfg.Plugins}
	if cfg.Rollout != nil {
		o.RolloutNamespace = cfg.HostNamespace()
	}
	if sec, on := cfg.Section(budgets.Kind); on && len(sec.Defaults) > 0 {
		var bc budgets.Config
		if err := json.Unmarshal(sec.Defaults, &bc); err != nil {
			return o, fmt.Errorf("admin overview: budgets: %w", err)
		}
		o.Budgets = bc.Budgets
	}
	return o, nil
}
