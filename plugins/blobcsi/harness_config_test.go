package blobcsi_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/profilekit/profilekit/internal/testenv"
)

// servers are what a test has to itself. An OPA server serving the example
// policy and a grants source name no other test uses: tests run side by
// side, and one server would have them overwrite each other's data.storage,
// one name would have the drop guard count every test's claims as grants in
// use. An Azurite of its own for a test that stops it (ownAzurite).
type servers struct {
	opa     *testenv.OPA
	source  string
	azurite *testenv.Azurite
}

// serversByTest holds each running test's servers, by its name.
var serversByTest sync.Map

// serversOf returns the servers of the test or of the nearest test above it
// that has some; a test without them gets its own, stopped when it ends.
// A test whose subtests share a source asks for it before they run.
func serversOf(t *testing.T) *servers {
	t.Helper()
	for name := t.Name(); ; {
		if s, ok := serversByTest.Load(name); ok {
			return s.(*servers)
		}
		i := strings.LastIndex(name, "/")
		if i < 0 {
			break
		}
		name = name[:i]
	}
	opa, err := testenv.StartOPA(filepath.Join(testenv.RepoRoot(), "examples", "opa", "grants.rego"))
	if err != nil {
		t.Fatal(err)
	}
	s := &servers{opa: opa, source: unique("grants"), azurite: azurite}
	serversByTest.Store(t.Name(), s)
	t.Cleanup(func() {
		serversByTest.Delete(t.Name())
		_ = opa.Stop()
	})
	return s
}

// ownAzurite gives the test an Azurite of its own, for the instances of its
// host config and the helpers that read containers, and returns it: for a
// test that stops Azurite while others run. Call it first.
func ownAzurite(t *testing.T) *testenv.Azurite {
	t.Helper()
	az, err := testenv.StartAzurite()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = az.Close() })
	serversOf(t).azurite = az
	return az
}

// hostConfig is the host's section for a test: three instances on Azurite
// and the test's own OPA grants source.
func hostConfig(t *testing.T, extra map[string]any) []byte {
	t.Helper()
	g := serversOf(t)
	inst := func(name, class string, ro, def bool) map[string]any {
		return map[string]any{
			"name": name, "classification": class, "account": g.azurite.Account, "blobEndpoint": g.azurite.BlobURL,
			"credentials": map[string]any{"secretName": secret, "secretNamespace": systemNS},
			"capacity":    "50Gi", "readOnly": ro, "default": def,
		}
	}
	cfg := map[string]any{
		"storage": []any{
			inst("standard", "unclassified", false, true),
			inst("standard-ro", "unclassified", true, false),
			inst("protected-b", "protected-b", false, false),
		},
		"grantSources": []any{map[string]any{
			"name": g.source, "instance": "standard",
			"opa": map[string]any{"url": g.opa.URL, "path": "storage/grants/unclassified", "interval": pollEvery.String()},
		}},
		"pvcLabels": map[string]string{"automount.example.org/blob": "true"},
		// The principals the tests' grants name (spn) to mount buckets.
		"principals": map[string]any{
			"sp":        principal("sp"),
			"sp-census": principal("sp-census"),
			"sp-labour": principal("sp-labour"),
		},
		// Each host config counts its deletions apart: tests share the
		// API server, and the count outlives a host.
		"deleteRecord": map[string]any{"name": unique("deletes")},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	b, _ := json.Marshal(cfg)
	return b
}

// principal is a service principal of the host's config whose Secret is
// named after it; only the driver would read it.
func principal(name string) map[string]any {
	return map[string]any{"clientID": name + "-client", "tenantID": "tenant-" + name,
		"secret": map[string]any{"name": name, "namespace": systemNS}}
}

// refreshes reads profilekit_grants_refresh_total for a source and result.
func refreshes(t *testing.T, source, result string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "profilekit_grants_refresh_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["source"] == source && l["result"] == result {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// hostConfigWithDrop is hostConfig with the grants source's maxDropShare.
func hostConfigWithDrop(t *testing.T, extra map[string]any, share float64) []byte {
	t.Helper()
	return withSource(hostConfig(t, extra), "maxDropShare", share)
}

// withSource sets one field of cfg's grants source.
func withSource(cfg []byte, field string, value any) []byte {
	var m map[string]any
	_ = json.Unmarshal(cfg, &m)
	m["grantSources"].([]any)[0].(map[string]any)[field] = value
	b, _ := json.Marshal(m)
	return b
}
