package hostconfig

import (
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilekit/profilekit/plugins/core"
)

// Defaults of the tenant page.
const (
	DefaultPageAddress        = ":8082"
	DefaultPageUserIDHeader   = core.DefaultUserIDHeader
	DefaultPageFrameAncestors = "'self'"
	DefaultPageAccessTTL      = 30 * time.Second
	DefaultPageAccessEntries  = 10000
)

// Page configures the tenant page that `profilekit run` serves when it is
// enabled: a read-only view of one namespace's plugins, quota, share of a
// team budget, limit range defaults, contributors, service account
// identities, volumes and PodDefaults, for the users who may list pods in
// it (see package page).
//
// The identity headers are trusted as the gateway sets them: deploy the
// page only behind an AuthorizationPolicy that lets the ingress gateway
// alone reach it, as examples/deploy does (see examples/host/docs/page.md).
type Page struct {
	// Enabled turns the page on. Default false.
	Enabled bool `json:"enabled,omitempty"`
	// Address is where the page listens. Default :8082.
	Address string `json:"address,omitempty"`
	// UserIDHeader carries the user's name from the gateway. Default
	// kubeflow-userid, or USERID_HEADER, as the core plugin's.
	UserIDHeader string `json:"userIdHeader,omitempty"`
	// UserIDPrefix comes before the user's name in that header and is
	// stripped from it. Default empty, or USERID_PREFIX, as the core
	// plugin's.
	UserIDPrefix string `json:"userIdPrefix,omitempty"`
	// GroupsHeader, when set, carries the user's groups, separated by
	// commas (kubeflow-groups, as the dashboard's). Default none.
	GroupsHeader string `json:"groupsHeader,omitempty"`
	// FrameAncestors is the Content-Security-Policy frame-ancestors source
	// list: who may show the page in a frame. Default 'self' (the
	// dashboard, served from the same host through the gateway).
	FrameAncestors string `json:"frameAncestors,omitempty"`
	// AccessTTL is how long an answer of the API server on whether a user
	// may see a namespace is reused. Default 30s; at most 5m.
	AccessTTL *metav1.Duration `json:"accessTTL,omitempty"`
	// AccessEntries bounds how many such answers are kept. Default 10000.
	AccessEntries int `json:"accessEntries,omitempty"`
	// Overview configures the admin overview.
	Overview PageOverview `json:"overview,omitempty"`
}

// TTL returns AccessTTL, or its default.
func (p Page) TTL() time.Duration {
	if p.AccessTTL == nil {
		return DefaultPageAccessTTL
	}
	return p.AccessTTL.Duration
}

// page validates the page section and fills in its defaults.
func (p *parser) page(pg *Page) { p.pageWith(pg, os.Getenv) }

func (p *parser) pageWith(pg *Page, getenv func(string) string) {
	path := field.NewPath("page")
	if pg.Address == "" {
		pg.Address = DefaultPageAddress
	}
	if _, port, err := net.SplitHostPort(pg.Address); err != nil {
		p.failf(path.Child("address"), "want host:port such as :8082, got %q", pg.Address)
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		p.failf(path.Child("address"), "want a port between 1 and 65535, got %q", port)
	}
	if pg.UserIDHeader == "" {
		pg.UserIDHeader = getenv(core.EnvUserIDHeader)
	}
	if pg.UserIDHeader == "" {
		pg.UserIDHeader = DefaultPageUserIDHeader
	}
	if pg.UserIDPrefix == "" {
		pg.UserIDPrefix = getenv(core.EnvUserIDPrefix)
	}
	for _, h := range []struct{ field, value string }{{"userIdHeader", pg.UserIDHeader}, {"groupsHeader", pg.GroupsHeader}} {
		if h.value != "" && !headerName(h.value) {
			p.failf(path.Child(h.field), "%q is not an HTTP header name", h.value)
		}
	}
	if strings.EqualFold(pg.UserIDHeader, pg.GroupsHeader) {
		p.failf(path.Child("groupsHeader"), "%q is the user-id header too", pg.GroupsHeader)
	}
	if pg.FrameAncestors == "" {
		pg.FrameAncestors = DefaultPageFrameAncestors
	}
	if strings.ContainsAny(pg.FrameAncestors, ";,\r\n") {
		p.failf(path.Child("frameAncestors"), "want a source list such as 'self' https://kubeflow.example.org, got %q", pg.FrameAncestors)
	}
	if t := pg.TTL(); t <= 0 || t > 5*time.Minute {
		p.failf(path.Child("accessTTL"), "want a duration above 0 and at most 5m (a revoked user keeps seeing the page that long), got %s", t)
	}
	switch {
	case pg.AccessEntries < 0:
		p.failf(path.Child("accessEntries"), "must not be negative, got %d", pg.AccessEntries)
	case pg.AccessEntries == 0:
		pg.AccessEntries = DefaultPageAccessEntries
	}
	p.overview(path.Child("overview"), &pg.Overview)
}

// headerName reports whether h is an HTTP header name (RFC 9110 token).
func headerName(h string) bool {
	for _, r := range h {
		if r > 127 || !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return h != ""
}
