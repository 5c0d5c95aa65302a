package outside

import (
	"fmt"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkOutsideRecordsHeld measures the heap a Records holds per
// record written and not yet read back from the cache: the most a host keeps
// is one entry per Profile whose record changed since its last pass (after a
// bulk convergence with a grant plugin, every Profile's), each named by a
// namespace of the longest length a Profile may have.
func BenchmarkOutsideRecordsHeld(b *testing.B) {
	const profiles = 10000
	name := StateName("workloadidentity")
	keys := make([]types.NamespacedName, profiles)
	for i := range keys {
		keys[i] = types.NamespacedName{Namespace: fmt.Sprintf("%058d-%04d", 0, i), Name: name}
	}
	var perEntry float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r := NewRecords()
		for i, k := range keys {
			r.wrote(k, fmt.Sprint(1000000+i))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perEntry = float64(after.HeapAlloc-before.HeapAlloc) / profiles
		if len(r.written) != profiles {
			b.Fatalf("%d entries held, want %d", len(r.written), profiles)
		}
	}
	b.ReportMetric(perEntry, "B/entry")
	b.ReportMetric(perEntry*profiles/(1<<20), "MiB/10k-Profiles")
}
