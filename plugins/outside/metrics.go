package outside

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Outside calls are counted here, where they are made, so that every host
// (standalone, a fork of the upstream controller) exports the same series.
var (
	outsideCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "profilekit_outside_calls_total",
		Help: "Calls to systems outside the cluster, by plugin kind, system and result (ok, error, timeout).",
	}, []string{"plugin", "system", "result"})
	outsideUnchanged = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "profilekit_outside_unchanged_total",
		Help: "Outside state found already true in the plugin's record, so that no call was made, by plugin kind and system.",
	}, []string{"plugin", "system"})
	outsideSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "profilekit_outside_call_duration_seconds",
		Help:    "Duration of calls to systems outside the cluster, by plugin kind and system.",
		Buckets: prometheus.ExponentialBuckets(0.005, 4, 8),
	}, []string{"plugin", "system"})
	danglingTrust = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "profilekit_dangling_trust_total",
		Help: "Grants that name a deleted Profile's namespace and that profilekit did not make, found when the Profile went, by plugin kind.",
	}, []string{"plugin"})
)

func init() {
	metrics.Registry.MustRegister(outsideCalls, outsideUnchanged, outsideSeconds, danglingTrust)
}
