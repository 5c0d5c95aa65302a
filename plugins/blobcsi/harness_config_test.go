package blobcsi_test

import (
	"encoding/json"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// hostConfig is the host's section for a test: three instances on Azurite
// and one OPA grants source whose document lives under dataPath.
func hostConfig(dataPath string, extra map[string]any) []byte {
	inst := func(name, class string, ro, def bool) map[string]any {
		return map[string]any{
			"name": name, "classification": class, "account": azurite.Account, "blobEndpoint": azurite.BlobURL,
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
			"name": "unclassified", "instance": "standard",
			"opa": map[string]any{"url": opaSrv.URL, "path": "storage/grants/unclassified", "interval": pollEvery.String()},
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
	// The policy reads data.storage; each test has its own copy of the
	// policy under its own package so that tests do not share documents.
	_ = dataPath
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
func hostConfigWithDrop(extra map[string]any, share float64) []byte {
	return withSource(hostConfig("storage", extra), "maxDropShare", share)
}

// hostConfigOwnSource is hostConfig with a grants source of the test's own,
// named name. The drop guard of a source named like every other test's
// counts the claims earlier tests left behind as grants in use, and refuses
// the first documents (GrantsNotSynced, with an Event per Profile) until
// they are gone; a test that counts writes must not see those.
func hostConfigOwnSource(name string) []byte {
	return withSource(hostConfig("storage", nil), "name", name)
}

// withSource sets one field of cfg's grants source.
func withSource(cfg []byte, field string, value any) []byte {
	var m map[string]any
	_ = json.Unmarshal(cfg, &m)
	m["grantSources"].([]any)[0].(map[string]any)[field] = value
	b, _ := json.Marshal(m)
	return b
}
