package reconcilers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/profilekit/profilekit/plugins"
)

// The controllers' own reconcile counters and durations come from
// controller-runtime (controller_runtime_reconcile_total and friends, labelled
// controller="profilekit-<kind>"); these add what only profilekit knows.
var (
	objectsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "profilekit_plugin_objects_total",
		Help: "Objects handled by plugins, by plugin kind and action (created, configured, unchanged, deleted, skipped).",
	}, []string{"plugin", "action"})
	failuresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "profilekit_plugin_failures_total",
		Help: "Failed applies and revokes, by plugin kind and reason.",
	}, []string{"plugin", "reason"})
	passSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "profilekit_plugin_pass_duration_seconds",
		Help:    "Duration of one Apply or Revoke pass, by plugin kind and verb.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
	}, []string{"plugin", "verb"})
)

func init() {
	metrics.Registry.MustRegister(objectsTotal, failuresTotal, passSeconds)
}

func observeResult(kind string, res plugins.Result) {
	for _, c := range res.Changes {
		objectsTotal.WithLabelValues(kind, string(c.Action)).Inc()
	}
}
