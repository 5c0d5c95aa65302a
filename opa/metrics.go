package opa

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	refreshTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "profilekit_grants_refresh_total",
		Help: "Refreshes of grants sources, by source and result (OK, or the reason the document was rejected: Unreachable, Undefined, Malformed, Missing, DropTooLarge, NoBaseline).",
	}, []string{"source", "result"})
	healthy = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "profilekit_grants_source_healthy",
		Help: "1 when the grants source's last refresh was taken, 0 when it was rejected and the last good snapshot is kept.",
	}, []string{"source"})
	buckets = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "profilekit_grants_buckets",
		Help: "Buckets in the grants source's last good snapshot.",
	}, []string{"source"})
	notifiedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "profilekit_grants_notified_namespaces_total",
		Help: "Namespaces whose Profiles a grants source asked to reconcile, because their grants or the source's health changed.",
	}, []string{"source"})
)

func init() {
	metrics.Registry.MustRegister(refreshTotal, healthy, buckets, notifiedTotal)
}
