package testenv

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// Counter counts the requests sent through a rest.Config, by verb and path,
// and how the API server answered each.
type Counter struct {
	mu       sync.Mutex
	requests []string
	// metadata marks the requests that asked for metadata only.
	metadata []bool
	// codes holds each request's HTTP status, 0 until it is answered or
	// when no answer came.
	codes []int
}

// Counting returns a copy of cfg whose requests c counts.
func (c *Counter) Counting(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			c.mu.Lock()
			i := len(c.requests)
			c.requests = append(c.requests, r.Method+" "+r.URL.Path)
			c.metadata = append(c.metadata, strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata"))
			c.codes = append(c.codes, 0)
			c.mu.Unlock()
			resp, err := rt.RoundTrip(r)
			if resp != nil {
				c.mu.Lock()
				// A Reset since may have forgotten the request.
				if i < len(c.codes) && c.requests[i] == r.Method+" "+r.URL.Path {
					c.codes[i] = resp.StatusCode
				}
				c.mu.Unlock()
			}
			return resp, err
		})
	})
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Reset forgets every request counted so far.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests, c.metadata, c.codes = nil, nil, nil
}

// Mutating returns the POST, PUT, PATCH and DELETE requests counted, sorted,
// as "VERB /path", whatever the answer. Pass path fragments to keep only
// requests whose path contains one of them.
func (c *Counter) Mutating(pathContains ...string) []string {
	return c.mutating(func(int) bool { return true }, pathContains)
}

// Landed returns the mutating requests the API server carried out (a 2xx
// answer), as Mutating does: a write refused with a conflict and sent
// again counts once.
func (c *Counter) Landed(pathContains ...string) []string {
	return c.mutating(func(code int) bool { return code >= 200 && code < 300 }, pathContains)
}

// Refused returns the mutating requests the API server refused or did not
// answer, as "VERB /path CODE" (0 for no answer), sorted.
func (c *Counter) Refused(pathContains ...string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for i, r := range c.requests {
		if code := c.codes[i]; isMutating(r, pathContains) && (code < 200 || code >= 300) {
			out = append(out, fmt.Sprintf("%s %d", r, code))
		}
	}
	slices.Sort(out)
	return out
}

// mutating returns the mutating requests whose answer keep accepts.
func (c *Counter) mutating(keep func(code int) bool, pathContains []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for i, r := range c.requests {
		if isMutating(r, pathContains) && keep(c.codes[i]) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// isMutating reports whether r ("VERB /path") writes and its path contains
// one of pathContains (any path when there are none).
func isMutating(r string, pathContains []string) bool {
	verb, path, _ := strings.Cut(r, " ")
	switch verb {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return false
	}
	return len(pathContains) == 0 || slices.ContainsFunc(pathContains, func(s string) bool { return strings.Contains(path, s) })
}

// Count returns how many requests with this verb and exactly this path
// were counted (a list and a watch of one resource share a path).
func (c *Counter) Count(verb, path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.requests {
		if r == verb+" "+path {
			n++
		}
	}
	return n
}

// Reads returns how many GET requests (lists and watches) for exactly this
// path asked for whole objects and how many for metadata only.
func (c *Counter) Reads(path string) (whole, metadata int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, r := range c.requests {
		switch {
		case r != http.MethodGet+" "+path:
		case c.metadata[i]:
			metadata++
		default:
			whole++
		}
	}
	return whole, metadata
}

// Total returns how many requests were counted.
func (c *Counter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.requests)
}

// String summarises the counted requests.
func (c *Counter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("%d requests", len(c.requests))
}
