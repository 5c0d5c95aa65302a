package page

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// User is who a request comes from, as the gateway's headers name them.
type User struct {
	// Name is the user-id header's value without the host's prefix.
	Name string
	// Groups are the groups header's values, sorted, when it is configured.
	Groups []string
}

// key is the user's identity as one string, for the access cache.
func (u User) key() string { return u.Name + "\x00" + strings.Join(u.Groups, "\x00") }

// Creator creates objects: a client of the API server (not the cache),
// which answers a SubjectAccessReview in the object it returns.
type Creator interface {
	Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error
}

// Access answers whether a user may see a namespace: whether the API server
// lets the user (with their groups) list pods in it, as Kubeflow's own web
// apps ask before they show a namespace's notebooks or volumes, and as
// kubeflow-view, -edit and -admin all allow. Answers are kept for a short
// time, up to a bounded number, so that a page view costs a request to the
// API server only for a namespace the user has not been checked for
// lately. Errors are not kept. It answers, from the same cache, whether a
// user may open the admin overview (MayOpenOverview).
type Access struct {
	api  Creator
	ttl  time.Duration
	max  int
	now  func() time.Time
	mu   sync.Mutex
	seen map[string]answer
}

type answer struct {
	allowed bool
	until   time.Time
}

// NewAccess returns an Access that asks api, and keeps at most limit answers
// for ttl each.
func NewAccess(api Creator, ttl time.Duration, limit int) *Access {
	return &Access{api: api, ttl: ttl, max: limit, now: time.Now, seen: map[string]answer{}}
}

// MaySee reports whether u may see namespace ns.
func (a *Access) MaySee(ctx context.Context, u User, ns string) (bool, error) {
	return a.allowed(ctx, u, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "pods"})
}

// allowed reports whether the API server lets u do what attrs say, from
// the cache when it answered lately.
func (a *Access) allowed(ctx context.Context, u User, attrs authorizationv1.ResourceAttributes) (bool, error) {
	k := strings.Join([]string{u.key(), attrs.Verb, attrs.Group, attrs.Resource, attrs.Namespace}, "\x00")
	now := a.now()
	a.mu.Lock()
	got, ok := a.seen[k]
	a.mu.Unlock()
	if ok && now.Before(got.until) {
		return got.allowed, nil
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               u.Name,
		Groups:             slices.Clone(u.Groups),
		ResourceAttributes: &attrs,
	}}
	if err := a.api.Create(ctx, sar); err != nil {
		what := attrs.Resource
		if attrs.Group != "" {
			what += "." + attrs.Group
		}
		if attrs.Namespace != "" {
			what += " in namespace " + attrs.Namespace
		}
		return false, fmt.Errorf("review whether %q may %s %s: %w", u.Name, attrs.Verb, what, err)
	}
	a.remember(k, answer{allowed: sar.Status.Allowed, until: now.Add(a.ttl)}, now)
	return sar.Status.Allowed, nil
}

// remember keeps an answer; when the cache is full it first drops the
// expired ones, then, if still full, all of them: a burst of new users
// costs each a review again, never unbounded memory.
func (a *Access) remember(k string, ans answer, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.seen) >= a.max {
		for key, v := range a.seen {
			if !now.Before(v.until) {
				delete(a.seen, key)
			}
		}
		if len(a.seen) >= a.max {
			clear(a.seen)
		}
	}
	a.seen[k] = ans
}
