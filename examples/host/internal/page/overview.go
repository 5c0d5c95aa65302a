package page

// This file holds the admin overview: who may open it, its routes and its
// rendering. What it shows is read in overview_profiles.go,
// overview_rollout.go, overview_budgets.go and overview_outside.go.

import (
	"context"
	"html/template"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/plugins/budgets"
)

// What the API server must let a user do to open the overview: get the
// resource overview in the group profilekit.dev, cluster-wide. No such
// resource is served; RBAC answers for it all the same, so that a
// ClusterRole grants it (the chart's and the kustomize base's
// profilekit-overview) and cluster-admin has it. A RoleBinding in a
// namespace never grants it: the review names no namespace.
const (
	OverviewGroup    = "profilekit.dev"
	OverviewResource = "overview"
	OverviewVerb     = "get"
)

// DefaultOverviewPageSize is how many Profiles one view of the overview
// lists.
const DefaultOverviewPageSize = 100

var overviewTmpl = template.Must(template.ParseFS(assets, "assets/overview.html"))

// OverviewOptions are the overview's settings, from the host configuration.
type OverviewOptions struct {
	// GrafanaURL links to the host's Grafana dashboard; empty, no link.
	GrafanaURL string
	// RolloutNamespace holds the staged rollout's state (the ConfigMap
	// rollout.ConfigMapName); empty when the host has no rollout settings.
	RolloutNamespace string
	// API reads that ConfigMap from the API server (the manager's
	// APIReader), every 10 s while Start runs. Required with a
	// RolloutNamespace.
	API client.Reader
	// Sections are the configuration's plugin sections, the candidate of a
	// rollout under way.
	Sections map[string]hostconfig.Plugin
	// Budgets are the budgets plugin's team budgets, none when it is off.
	Budgets []budgets.Budget
	// Metrics is where the host's own metrics are read. Default
	// controller-runtime's registry, which the host serves on /metrics.
	Metrics prometheus.Gatherer
	// PageSize is how many Profiles one view lists. Default
	// DefaultOverviewPageSize.
	PageSize int
	// Elected is closed once this replica leads (the manager's Elected):
	// only the leader reconciles, and so calls outside systems. Nil: it
	// leads.
	Elected <-chan struct{}
}

// Overview serves the admin overview at /overview: every Profile with the
// failing ones first, filtered and searched by query parameters (q, state,
// plugin, selector, page), the staged rollout's progress, the team
// budgets, and the outside systems' error rates from the host's metrics. A
// view reads the tenant page's cache and what Start keeps, and asks the API
// server only whether the user may open it (Access.MayOpenOverview). It
// runs no script at all.
type Overview struct {
	tenant       *Handler
	opts         OverviewOptions
	csp          string
	rates        *rates
	rolloutState rolloutState
	now          func() time.Time
}

// NewOverview returns the overview of the host whose tenant page is h: it
// reads the same cache, checks access with the same Access, and takes the
// user from the same headers.
func NewOverview(h *Handler, opts OverviewOptions) *Overview {
	if opts.Metrics == nil {
		opts.Metrics = metrics.Registry
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultOverviewPageSize
	}
	return &Overview{
		tenant: h,
		opts:   opts,
		csp: "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors " +
			h.opts.FrameAncestors,
		rates: &rates{},
		now:   time.Now,
	}
}

// NewMux routes /overview and the overview's style to o and everything else
// to the tenant page h.
func NewMux(h *Handler, o *Overview) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.Handle("/overview", o)
	mux.Handle("/static/overview.css", o)
	return mux
}

// MayOpenOverview reports whether u may open the admin overview: whether
// the API server lets u, with their groups, get overview.profilekit.dev
// cluster-wide.
func (a *Access) MayOpenOverview(ctx context.Context, u User) (bool, error) {
	return a.allowed(ctx, u, authorizationv1.ResourceAttributes{Group: OverviewGroup, Resource: OverviewResource, Verb: OverviewVerb})
}

// overview is what the template renders.
type overview struct {
	User     string
	Grafana  string
	Filter   filter
	Profiles profilesView
	Rollout  rolloutView
	Budgets  []budgetView
	Outside  outsideView
}

// ServeHTTP answers GET and HEAD requests.
func (o *Overview) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u, ctx, cancel, ok := o.tenant.begin(w, r, o.csp, "/overview", "/static/overview.css")
	if !ok {
		return
	}
	defer cancel()
	hd := w.Header()
	allowed, err := o.tenant.access.MayOpenOverview(ctx, u)
	if err != nil {
		o.tenant.fail(ctx, w, err)
		return
	}
	if !allowed {
		hd.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte("The overview is for platform administrators: it opens for users bound to the ClusterRole profilekit-overview " +
			"(get on overview.profilekit.dev). Your namespaces are on the namespace page.\n"))
		return
	}
	v, err := o.build(ctx, u, r)
	if err != nil {
		o.tenant.fail(ctx, w, err)
		return
	}
	hd.Set("Content-Type", "text/html; charset=utf-8")
	if err := overviewTmpl.Execute(w, v); err != nil {
		log.FromContext(ctx).Error(err, "render the admin overview")
	}
}

// build reads everything the overview shows from the cache and the
// metrics.
func (o *Overview) build(ctx context.Context, u User, r *http.Request) (*overview, error) {
	f := parseFilter(r.URL.Query())
	// The cache's own objects, not copies: nothing here writes to them.
	var list kubeflowv1.ProfileList
	if err := o.tenant.read.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	v := &overview{User: u.Name, Grafana: o.opts.GrafanaURL, Filter: f}
	v.Profiles = profilesOf(list.Items, f, o.opts.PageSize)
	v.Rollout = o.rollout(list.Items)
	var err error
	if v.Budgets, err = o.budgets(ctx, list.Items); err != nil {
		return nil, err
	}
	v.Outside = o.outside(o.now())
	return v, nil
}

// Start reads the rollout's state and samples the outside calls' counters
// (for their recent error rates) every 10 s until ctx ends: a
// controller-runtime Runnable, on every replica.
func (o *Overview) Start(ctx context.Context) error {
	t := time.NewTicker(rolloutEvery)
	defer t.Stop()
	for {
		o.readRollout(ctx)
		o.sample(o.now())
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// NeedLeaderElection is false: every replica serves the overview.
func (*Overview) NeedLeaderElection() bool { return false }
