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
