package hostconfig

import (
	"net/url"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PageOverview configures the page's admin overview (/overview on the
// page's address): every Profile with its failing plugins first, the
// staged rollout, the team budgets and the outside systems' error rates,
// for the users the API server lets get overview.profilekit.dev (see
// package page).
type PageOverview struct {
	// GrafanaURL is the address of the Grafana dashboard of
	// examples/deploy/monitoring (its uid is profilekit), such as
	// https://grafana.example.org/d/profilekit/profilekit, or a path on
	// the gateway's host (/grafana/d/profilekit/profilekit). Empty: the
	// overview links to no dashboard. Default empty.
	GrafanaURL string `json:"grafanaURL,omitempty"`
}

// overview validates the page's overview section.
func (p *parser) overview(path *field.Path, o *PageOverview) {
	if o.GrafanaURL == "" {
		return
	}
	u, err := url.Parse(o.GrafanaURL)
	switch {
	case err != nil:
		p.failf(path.Child("grafanaURL"), "%v", err)
	case u.Scheme == "" && u.Host == "" && len(u.Path) > 0 && u.Path[0] == '/':
		// A path on the gateway's host.
	case (u.Scheme == "https" || u.Scheme == "http") && u.Host != "":
	default:
		p.failf(path.Child("grafanaURL"), "want an http(s) address such as https://grafana.example.org/d/profilekit/profilekit, or a path such as /grafana/d/profilekit/profilekit, got %q", o.GrafanaURL)
	}
}
