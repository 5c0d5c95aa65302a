package testenv

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// Counter counts the requests sent through a rest.Config, by verb and path.
type Counter struct {
	mu       sync.Mutex
	requests []string
	// metadata marks the requests that asked for metadata only.
	metadata []bool
}

// Counting returns a copy of cfg whose requests c counts.
func (c *Counter) Counting(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			c.mu.Lock()
			c.requests = append(c.requests, r.Method+" "+r.URL.Path)
			c.metadata = append(c.metadata, strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata"))
			c.mu.Unlock()
			return rt.RoundTrip(r)
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
	c.requests, c.metadata = nil, nil
}

// Mutating returns the POST, PUT, PATCH and DELETE requests counted, sorted,
// as "VERB /path". Pass path fragments to keep only requests whose path
// contains one of them.
func (c *Counter) Mutating(pathContains ...string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, r := range c.requests {
		verb, path, _ := strings.Cut(r, " ")
		switch verb {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			continue
		}
		if len(pathContains) > 0 && !slices.ContainsFunc(pathContains, func(s string) bool { return strings.Contains(path, s) }) {
			continue
		}
		out = append(out, r)
	}
	slices.Sort(out)
	return out
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
