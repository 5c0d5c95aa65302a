package rollout

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	profilesGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "profilekit_rollout_profiles",
		Help: "Profiles of the host's shard by rollout state: updated (they have the configuration being rolled out, or every Profile once none is) or pending (they keep the stable one).",
	}, []string{"state"})
	pausedGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "profilekit_rollout_paused",
		Help: "1 while a staged rollout is paused by a failure of its batch, else 0.",
	})
	batchGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "profilekit_rollout_batch",
		Help: "The batch a staged rollout has reached; 0 when none is under way.",
	})
)

func init() {
	metrics.Registry.MustRegister(profilesGauge, pausedGauge, batchGauge)
}

// report sets the metrics from where the rollout stands.
func report(s *State, updated, pending int) {
	profilesGauge.WithLabelValues("updated").Set(float64(updated))
	profilesGauge.WithLabelValues("pending").Set(float64(pending))
	paused := 0.0
	if s.Active() && s.Paused {
		paused = 1
	}
	pausedGauge.Set(paused)
	batch := 0.0
	if s.Active() {
		batch = float64(s.Batches)
	}
	batchGauge.Set(batch)
}
