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
}

// Counting returns a copy of cfg whose requests c counts.
func (c *Counter) Counting(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			c.mu.Lock()
			c.requests = append(c.requests, r.Method+" "+r.URL.Path)
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
	c.requests = nil
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

// String summarises the counted requests.
func (c *Counter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("%d requests", len(c.requests))
}
