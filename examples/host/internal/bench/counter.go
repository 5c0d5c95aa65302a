package bench

import (
	"maps"
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// Mutating verbs, in the API server's spelling (apiserver_request_total).
var mutatingVerbs = map[string]bool{
	"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true,
}

// requestKey is a request's verb and resource, spelled as the API server's
// apiserver_request_total spells them, so that the client's and the
// server's counts line up: verb GET, LIST, WATCH, POST, PUT, PATCH, APPLY,
// DELETE or DELETECOLLECTION; resource with its subresource after a slash
// (profiles/status).
type requestKey struct {
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
}

// counts are request counts by verb and resource.
type counts map[requestKey]int

func (c counts) total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// reviews are the resources a POST asks a question of and that store
// nothing: an access review (the host asks one at each start, whether it
// may move earlier records) is not a write.
var reviews = map[string]bool{
	"selfsubjectaccessreviews": true, "subjectaccessreviews": true, "localsubjectaccessreviews": true,
	"selfsubjectrulesreviews": true, "tokenreviews": true,
}

// mutating counts the requests that write: mutating verbs, but a POST of
// a review.
func (c counts) mutating() int {
	n := 0
	for k, v := range c {
		if mutatingVerbs[k.Verb] && !reviews[k.Resource] {
			n += v
		}
	}
	return n
}

// minus returns c less o, dropping keys that fall to zero or below.
func (c counts) minus(o counts) counts {
	out := counts{}
	for k, v := range c {
		if d := v - o[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// only returns the counts whose resource (without subresource) is in keep.
func (c counts) only(keep map[string]bool) counts {
	out := counts{}
	for k, v := range c {
		r, _, _ := strings.Cut(k.Resource, "/")
		if keep[r] {
			out[k] = v
		}
	}
	return out
}

// counter counts the requests sent through a rest.Config, by verb and
// resource, on the client side: what the client asked for, whatever the
// server then did.
type counter struct {
	// skipProbes leaves out the requests on the latency probes' Profiles
	// and namespaces.
	skipProbes bool

	mu sync.Mutex
	n  counts
	// conflicts are the requests answered 409 Conflict.
	conflicts counts
}

func newCounter() *counter { return &counter{n: counts{}, conflicts: counts{}} }

// newHostCounter returns a counter for a host, which leaves out the
// requests on the latency probes' Profiles.
func newHostCounter() *counter {
	c := newCounter()
	c.skipProbes = true
	return c
}

// wrap returns a copy of cfg whose requests c counts.
func (c *counter) wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			k, ok := classify(r)
			ok = ok && !(c.skipProbes && isProbePath(r.URL.Path))
			if ok {
				c.mu.Lock()
				c.n[k]++
				c.mu.Unlock()
			}
			resp, err := rt.RoundTrip(r)
			if ok && err == nil && resp.StatusCode == http.StatusConflict {
				c.mu.Lock()
				c.conflicts[k]++
				c.mu.Unlock()
			}
			return resp, err
		})
	})
	return out
}

// snapshot returns the counts so far.
func (c *counter) snapshot() counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// conflictCount returns the requests answered 409 so far.
func (c *counter) conflictCount() counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.conflicts)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// classify turns a request into the API server's verb and resource. Paths
// outside /api and /apis (discovery's /version, /metrics) are not counted.
func classify(r *http.Request) (requestKey, bool) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	default:
		return requestKey{}, false
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	if len(rest) == 0 {
		// Discovery of a group version.
		return requestKey{}, false
	}
	resource := rest[0]
	named := len(rest) >= 2
	if len(rest) >= 3 {
		resource += "/" + rest[2]
	}
	verb := r.Method
	switch r.Method {
	case http.MethodGet:
		switch {
		case named:
			verb = "GET"
		case r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1":
			verb = "WATCH"
		default:
			verb = "LIST"
		}
	case http.MethodPatch:
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch") {
			verb = "APPLY"
		}
	case http.MethodDelete:
		if !named {
			verb = "DELETECOLLECTION"
		}
	}
	return requestKey{Verb: verb, Resource: resource}, true
}
