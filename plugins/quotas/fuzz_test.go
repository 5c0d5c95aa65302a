package quotas_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/quotas"
)

// FuzzHard feeds arbitrary override labels to the quota builder: it must never
// panic, a rejection must be a terminal InvalidLabel error, and an accepted
// quota must respect the caps.
func FuzzHard(f *testing.F) {
	for _, seed := range [][2]string{
		{"limits.cpu", "8"}, {"limits.cpu", "lots"}, {"gpu", "1"}, {"gpu", "3"},
		{"requests.cpu", "100"}, {"limits.memory", "1e3Gi"}, {"pods", "-1"},
		{"requests.storage", "9999999999999999999999Ei"}, {"cpu", "0.5m"}, {"x", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		cfg := quotas.NewConfig()
		cfg.Hard = list("requests.cpu", "2", "limits.cpu", "4")
		cfg.Caps = list("limits.cpu", "16", "requests.nvidia.com/gpu", "2")
		p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "fuzz", Labels: map[string]string{cfg.LabelPrefix + "/" + name: value}}}
		hard, err := quotas.Hard(cfg, p)
		if err != nil {
			if !plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != plugins.ReasonInvalidLabel {
				t.Fatalf("error %v is not a terminal InvalidLabel error", err)
			}
			return
		}
		for res, limit := range cfg.Caps {
			if q, ok := hard[res]; ok && q.Cmp(limit) > 0 {
				t.Fatalf("%s=%s passed above its cap %s", res, q.String(), limit.String())
			}
		}
	})
}
