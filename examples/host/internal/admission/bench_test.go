package admission_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/examples/host/internal/admission"
	"github.com/profilekit/profilekit/examples/host/internal/render"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/internal/testenv"
)

// BenchmarkAdmission measures what the webhook adds to a Profile's creation
// through the real API server: server-side dry-run creates (admission runs,
// nothing is stored) of a good sample Profile and of a refused one, with the
// webhook and past it, and the webhook's decision alone. Each reports the
// median and 99th percentile per request; run it with -benchtime 1000x for
// 1,000 requests each:
//
//	go test ./examples/host/internal/admission -run '^$' -bench Admission -benchtime 1000x
func BenchmarkAdmission(b *testing.B) {
	startHost(b, nil)
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "profiles", "team-a.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	good := profileObject(b, data)
	bad := withLabel(good, "quotas.profilekit.dev/limits.cpu", "lots")
	for _, tc := range []struct {
		name   string
		obj    *unstructured.Unstructured
		denied bool
	}{
		{"api/good/webhook", good, false},
		{"api/good/no-webhook", withLabel(good, bypassLabel, "off"), false},
		{"api/refused/webhook", bad, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				obj := tc.obj.DeepCopy()
				start := time.Now()
				err := env.Client.Create(b.Context(), obj, client.DryRunAll)
				lat = append(lat, time.Since(start))
				if denied := err != nil && strings.Contains(err.Error(), "denied the request"); denied != tc.denied {
					b.Fatalf("denied %v, want %v: %v", denied, tc.denied, err)
				} else if err != nil && !tc.denied {
					b.Fatal(err)
				}
			}
			report(b, lat)
		})
	}

	cfg, reg := hostConfig(b, nil)
	s, err := server.NewScheme()
	if err != nil {
		b.Fatal(err)
	}
	v := admission.New(cfg, reg, s)
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
	}{{"decide/good", good}, {"decide/refused", bad}} {
		profiles, err := render.ReadProfiles(strings.NewReader(mustJSON(b, tc.obj)), tc.name)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				start := time.Now()
				v.Decide(b.Context(), nil, profiles[0])
				lat = append(lat, time.Since(start))
			}
			report(b, lat)
		})
	}
}

func mustJSON(b *testing.B, u *unstructured.Unstructured) string {
	data, err := u.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}

// report adds the median and 99th percentile of the latencies.
func report(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(float64(len(lat)), "requests")
}
