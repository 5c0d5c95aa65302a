package bench

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// serverCounts reads apiserver_request_total from the API server's own
// /metrics, by verb and resource: every request the server served, from
// every client, including its own loopback writes (its lease renewals).
func serverCounts(ctx context.Context, cs kubernetes.Interface) (counts, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the API server's /metrics: %w", err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse the API server's /metrics: %w", err)
	}
	out := counts{}
	fam, ok := fams["apiserver_request_total"]
	if !ok {
		return out, nil
	}
	for _, m := range fam.GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["resource"] == "" {
			// Non-resource paths: /metrics, /healthz, discovery.
			continue
		}
		res := l["resource"]
		if l["subresource"] != "" {
			res += "/" + l["subresource"]
		}
		out[requestKey{Verb: l["verb"], Resource: res}] += int(m.GetCounter().GetValue())
	}
	return out, nil
}

// Names of the controller metrics the benchmark reads.
const (
	reconcileTotal = "controller_runtime_reconcile_total"
	activeWorkers  = "controller_runtime_active_workers"
	queueDepth     = "workqueue_depth"
)

// gatherRegistry reads the process's metrics registry, which every manager
// in the process shares. It costs the host CPU while it runs, so each look
// gathers once and answers all its questions from that.
func gatherRegistry() ([]*dto.MetricFamily, error) {
	fams, err := metrics.Registry.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather metrics: %w", err)
	}
	return fams, nil
}

// controllerCounters returns, per controller, the sum over results of
// controller_runtime_reconcile_total.
func controllerCounters() (map[string]int, error) {
	fams, err := gatherRegistry()
	if err != nil {
		return nil, err
	}
	return byController(fams, reconcileTotal, true), nil
}

// busyControllers returns the number of queued and in-flight reconciles per
// controller (workqueue_depth plus controller_runtime_active_workers).
func busyControllers() (int, error) {
	fams, err := gatherRegistry()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, v := range byController(fams, queueDepth, false) {
		n += v
	}
	for _, v := range byController(fams, activeWorkers, false) {
		n += v
	}
	return n, nil
}

// byController sums a metric of the profilekit controllers per controller.
func byController(fams []*dto.MetricFamily, name string, counter bool) map[string]int {
	out := map[string]int{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var ctrl string
			for _, lp := range m.GetLabel() {
				// workqueue_depth names the controller in "name".
				if lp.GetName() == "controller" || lp.GetName() == "name" {
					ctrl = lp.GetValue()
				}
			}
			if !strings.HasPrefix(ctrl, "profilekit-") {
				continue
			}
			if counter {
				out[ctrl] += int(m.GetCounter().GetValue())
			} else {
				out[ctrl] += int(m.GetGauge().GetValue())
			}
		}
	}
	return out
}
