package reconcilers

// This file holds LeanApplies, which spares the API server a second decoding
// of every server-side apply the host sends.

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// LeanApplies returns a copy of cfg whose server-side applies ask the API
// server not to check them for unknown or duplicate fields
// (fieldValidation=Ignore), unless a request sets fieldValidation itself.
//
// The API server decodes an apply's YAML body once to apply it and, under
// its default (Warn), a second time strictly, only to return warnings: a
// field it does not know is dropped either way. Plugins build their objects
// from Go types or strictly decoded configuration, so the second decoding
// finds nothing; skipping it took a fifth of the API server's CPU per apply
// off in the benchmark (see bench/README.md). Other requests are sent as
// they are.
func LeanApplies(cfg *rest.Config) *rest.Config {
	rc := rest.CopyConfig(cfg)
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return leanApplies{rt} })
	return rc
}

// leanApplies sets fieldValidation=Ignore on apply requests.
type leanApplies struct{ next http.RoundTripper }

func (l leanApplies) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPatch || !strings.HasPrefix(req.Header.Get("Content-Type"), string(types.ApplyPatchType)) {
		return l.next.RoundTrip(req)
	}
	q := req.URL.Query()
	if q.Has("fieldValidation") {
		return l.next.RoundTrip(req)
	}
	q.Set("fieldValidation", "Ignore")
	r := req.Clone(req.Context())
	r.URL.RawQuery = q.Encode()
	return l.next.RoundTrip(r)
}
