package bench

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

func family(name string, counter bool, values map[[2]string]float64) *dto.MetricFamily {
	f := &dto.MetricFamily{Name: proto.String(name)}
	for l, v := range values {
		m := &dto.Metric{Label: []*dto.LabelPair{{Name: proto.String(l[0]), Value: proto.String(l[1])}}}
		if counter {
			m.Counter = &dto.Counter{Value: proto.Float64(v)}
		} else {
			m.Gauge = &dto.Gauge{Value: proto.Float64(v)}
		}
		f.Metric = append(f.Metric, m)
	}
	return f
}

func TestByControllerSumsOurControllersOnly(t *testing.T) {
	fams := []*dto.MetricFamily{
		family(reconcileTotal, true, map[[2]string]float64{
			{"controller", "profilekit-quotas"}: 3,
			{"controller", "other-controller"}:  100,
		}),
		// A second series of one controller (another result) adds up.
		family(reconcileTotal, true, map[[2]string]float64{{"controller", "profilekit-quotas"}: 4}),
		family(queueDepth, false, map[[2]string]float64{{"name", "profilekit-core"}: 2}),
		family(activeWorkers, false, map[[2]string]float64{{"controller", "profilekit-core"}: 5}),
	}
	if diff := cmp.Diff(map[string]int{"profilekit-quotas": 7}, byController(fams, reconcileTotal, true)); diff != "" {
		t.Errorf("reconcile totals (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"profilekit-core": 2}, byController(fams, queueDepth, false)); diff != "" {
		t.Errorf("queue depth, which names the controller in \"name\" (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"profilekit-core": 5}, byController(fams, activeWorkers, false)); diff != "" {
		t.Errorf("active workers (-want +got):\n%s", diff)
	}
}

func TestReconcilesPerProfileByPluginAndTrigger(t *testing.T) {
	series := func(plugin, trigger string, v float64) *dto.Metric {
		return &dto.Metric{
			Label: []*dto.LabelPair{
				{Name: proto.String("plugin"), Value: proto.String(plugin)},
				{Name: proto.String("trigger"), Value: proto.String(trigger)},
			},
			Counter: &dto.Counter{Value: proto.Float64(v)},
		}
	}
	fam := func(ms ...*dto.Metric) []*dto.MetricFamily {
		return []*dto.MetricFamily{{Name: proto.String(reconcilesByTrigger), Metric: ms}}
	}
	before := wakesOf(fam(series("quotas", "profile", 5), series("core", "profile", 5)))
	after := wakesOf(fam(series("quotas", "profile", 15), series("quotas", "namespace", 10), series("core", "profile", 15), series("core", "requeue", 5)))
	got := reconcilesOf(after.since(before), 10, 2)
	want := &Reconciles{
		Profiles: 10, Plugins: 2, PerProfile: 3.5,
		ByPlugin:  map[string]float64{"quotas": 2, "core": 1.5},
		ByTrigger: map[string]map[string]float64{"quotas": {"profile": 1, "namespace": 1}, "core": {"profile": 1, "requeue": 0.5}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reconciles per Profile (-want +got):\n%s", diff)
	}
	if got.Target() != 4 {
		t.Errorf("target %v, want plugins + 2 = 4", got.Target())
	}
}

// A POST that asks a review stores nothing: the host's access review at
// each start is not counted as a write.
func TestReviewsAreNotWrites(t *testing.T) {
	c := counts{
		{Verb: "POST", Resource: "selfsubjectaccessreviews"}: 2,
		{Verb: "POST", Resource: "configmaps"}:               1,
		{Verb: "APPLY", Resource: "resourcequotas"}:          3,
		{Verb: "LIST", Resource: "configmaps"}:               4,
	}
	if got := c.mutating(); got != 4 {
		t.Errorf("mutating() = %d, want 4 (1 POST of a ConfigMap, 3 applies)", got)
	}
	if got := c.total(); got != 10 {
		t.Errorf("total() = %d, want 10", got)
	}
}
