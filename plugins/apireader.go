package plugins

import (
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// APIReader keeps the reader without a cache that a Definition's Runner
// receives ([Runtime].Reader), for the few reads a pass must make from the
// API server because a cache may not yet show what changed a moment
// before. A plugin's Definition makes one, its Runner sets it, and its
// passes read through it. The zero value and a nil *APIReader hold none: in
// hosts that run no Runner (offline rendering, the upstream adapter) a pass
// falls back to its request's client. It is safe for concurrent use.
type APIReader struct {
	mu sync.Mutex
	r  client.Reader
}

// Set keeps r.
func (a *APIReader) Set(r client.Reader) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.r = r
}

// Get returns the reader kept, or nil when there is none.
func (a *APIReader) Get() client.Reader {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.r
}

// Or returns the reader kept, or fallback when there is none.
func (a *APIReader) Or(fallback client.Reader) client.Reader {
	if r := a.Get(); r != nil {
		return r
	}
	return fallback
}
