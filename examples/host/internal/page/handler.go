package page

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

//go:embed assets
var assets embed.FS

var tmpl = template.Must(template.ParseFS(assets, "assets/page.html"))

// Options are the page's settings (hostconfig.Page).
type Options struct {
	// UserIDHeader carries the user's name; UserIDPrefix is stripped from
	// it. A request without the header, or whose value lacks the prefix,
	// is refused.
	UserIDHeader, UserIDPrefix string
	// GroupsHeader, when set, carries the user's groups, comma-separated.
	GroupsHeader string
	// FrameAncestors is the Content-Security-Policy frame-ancestors list.
	FrameAncestors string
	// Whole are the kinds the host caches whole; the page reads the
	// others as metadata only. It must hold WholeKinds.
	Whole []schema.GroupVersionKind
	// Members reads every RoleBinding (NewMembers), so that the page
	// shows the contributors added in the dashboard too. Required.
	Members client.Reader
	// AppsNamespace is where the apps plugin keeps its Argo CD
	// Applications, when the host runs it: the page then shows each app of
	// the namespace and its health, from the cache the plugin fills. Empty
	// leaves the apps section out.
	AppsNamespace string
	// Timeout bounds one view: a view that the cache or the API server
	// cannot answer in time (say, a kind the host may not list, whose
	// cache never fills) answers 503. Default DefaultTimeout.
	Timeout time.Duration
}

// DefaultTimeout is Options.Timeout's default.
const DefaultTimeout = 10 * time.Second

// Handler serves the tenant page: GET / lists the namespaces the user may
// see, GET /?ns=<name> shows one, /static/ holds its script and style.
// It reads only the manager's cache, and asks the API server only whether
// the user may see a namespace (Access).
type Handler struct {
	read   reader
	access *Access
	opts   Options
	static http.Handler
	csp    string
}

// New returns the page's handler reading cache (the manager's client,
// whose reads come from its cache) with scheme, and checking access.
func New(cache client.Reader, scheme *runtime.Scheme, access *Access, opts Options) *Handler {
	sub, _ := fs.Sub(assets, "assets")
	if opts.FrameAncestors == "" {
		opts.FrameAncestors = "'self'"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	return &Handler{
		read:   reader{Reader: cache, scheme: scheme, whole: opts.Whole, members: opts.Members, appsNamespace: opts.AppsNamespace},
		access: access,
		opts:   opts,
		static: http.StripPrefix("/static/", http.FileServerFS(sub)),
		csp: "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; " +
			"base-uri 'none'; form-action 'self'; frame-ancestors " + opts.FrameAncestors,
	}
}

// page is what the template renders.
type page struct {
	User       string
	Namespaces []string
	Selected   string
	View       *View
	NotFound   bool
}

// begin opens a view served at path under the Content-Security-Policy
// csp: it sets the headers every answer carries and answers, itself, a
// method other than GET and HEAD, the static files named in static, any
// other path and a request with no user identity. For a view to build, it
// returns the user and a context that ends with the view's timeout.
func (h *Handler) begin(w http.ResponseWriter, r *http.Request, csp, path string, static ...string) (User, context.Context, context.CancelFunc, bool) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	switch {
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return User{}, nil, nil, false
	case slices.Contains(static, r.URL.Path):
		h.static.ServeHTTP(w, r)
		return User{}, nil, nil, false
	case r.URL.Path != path:
		http.NotFound(w, r)
		return User{}, nil, nil, false
	}
	hd.Set("Cache-Control", "no-store")
	u, ok := h.user(r)
	if !ok {
		http.Error(w, "no user identity: reach this page through the Kubeflow gateway", http.StatusUnauthorized)
		return User{}, nil, nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.Timeout)
	return u, ctx, cancel, true
}

// ServeHTTP answers GET and HEAD requests.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u, ctx, cancel, ok := h.begin(w, r, h.csp, "/", "/static/page.js", "/static/page.css")
	if !ok {
		return
	}
	defer cancel()
	hd := w.Header()
	p := page{User: u.Name, Selected: r.URL.Query().Get("ns")}
	var err error
	if p.Namespaces, err = h.visible(ctx, u); err != nil {
		h.fail(ctx, w, err)
		return
	}
	status := http.StatusOK
	if p.Selected != "" {
		p.View, err = h.view(ctx, u, p.Selected)
		switch {
		case err != nil:
			h.fail(ctx, w, err)
			return
		case p.View == nil:
			// Not allowed and not there answer alike.
			p.NotFound, status = true, http.StatusNotFound
		}
	}
	hd.Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := tmpl.Execute(w, p); err != nil {
		log.FromContext(ctx).Error(err, "render the tenant page")
	}
}

// view returns the namespace ns when u may see it and a Profile makes it,
// else nil. Access is checked first, so that a namespace that does not
// exist takes the same path as one the user may not see.
func (h *Handler) view(ctx context.Context, u User, ns string) (*View, error) {
	if len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, nil
	}
	ok, err := h.access.MaySee(ctx, u, ns)
	if err != nil || !ok {
		return nil, err
	}
	p := &kubeflowv1.Profile{}
	if err := h.read.Get(ctx, client.ObjectKey{Name: ns}, p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return h.read.view(ctx, p)
}

// visible returns the namespaces the picker offers u: those of the
// Profiles that name u or one of u's groups as owner, or where a binding
// carries KFAM's user annotation for u or a group of u's, each kept only
// when the API server lets u see it.
func (h *Handler) visible(ctx context.Context, u User) ([]string, error) {
	names := append([]string{u.Name}, u.Groups...)
	// The cache's own Profiles, not copies: only read here, and a copy of
	// each on every view is most of a view's cost with thousands of them.
	var profiles kubeflowv1.ProfileList
	if err := h.read.List(ctx, &profiles, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	owned := map[string]bool{}
	var candidates []string
	for _, p := range profiles.Items {
		owned[p.Name] = true
		if slices.Contains(names, p.Spec.Owner.Name) {
			candidates = append(candidates, p.Name)
		}
	}
	for _, name := range names {
		var bindings metav1.PartialObjectMetadataList
		bindings.SetGroupVersionKind(roleBindingGVK.GroupVersion().WithKind("RoleBindingList"))
		if err := h.read.members.List(ctx, &bindings, client.MatchingFields{userIndex: name}); err != nil {
			return nil, fmt.Errorf("list the bindings of %q: %w", name, err)
		}
		for _, b := range bindings.Items {
			// Only a Profile's namespace has a page.
			if owned[b.Namespace] {
				candidates = append(candidates, b.Namespace)
			}
		}
	}
	slices.Sort(candidates)
	var out []string
	for _, ns := range slices.Compact(candidates) {
		ok, err := h.access.MaySee(ctx, u, ns)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, ns)
		}
	}
	return out, nil
}

// user reads the identity headers.
func (h *Handler) user(r *http.Request) (User, bool) {
	id := r.Header.Get(h.opts.UserIDHeader)
	name, ok := strings.CutPrefix(id, h.opts.UserIDPrefix)
	if id == "" || !ok || name == "" {
		return User{}, false
	}
	u := User{Name: name}
	if h.opts.GroupsHeader != "" {
		for _, v := range r.Header.Values(h.opts.GroupsHeader) {
			for g := range strings.SplitSeq(v, ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		slices.Sort(u.Groups)
		u.Groups = slices.Compact(u.Groups)
	}
	return u, true
}

// fail answers an error of the cache or the API server without its text,
// which is logged.
func (h *Handler) fail(ctx context.Context, w http.ResponseWriter, err error) {
	if !errors.Is(err, context.Canceled) {
		log.FromContext(ctx).Error(err, "serve the tenant page")
	}
	http.Error(w, "the page cannot be shown right now; try again in a minute", http.StatusServiceUnavailable)
}
