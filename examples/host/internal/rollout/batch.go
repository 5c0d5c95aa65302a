package rollout

// This file holds the batch arithmetic: the order Profiles go in, how many
// each batch takes, and which Profiles the next batch takes.

import (
	"hash/fnv"
	"math"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
)

// Key is a Profile's place in every rollout's order: a hash of its UID, so
// that the order is stable across restarts and spreads tenants evenly,
// whatever their names.
func Key(uid types.UID) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(uid))
	return h.Sum64()
}

// BatchSize returns how many of total Profiles one batch takes: the count,
// or the share rounded up; at least 1.
func BatchSize(b hostconfig.Batch, total int) int {
	if b.Count > 0 {
		return b.Count
	}
	n := int(math.Ceil(b.Percent * float64(total) / 100))
	return max(n, 1)
}

// Batches returns how many batches a rollout over total Profiles takes.
func Batches(b hostconfig.Batch, total int) int {
	if total == 0 {
		return 0
	}
	size := BatchSize(b, total)
	return (total + size - 1) / size
}

// NextTo returns the threshold that takes the next batch: the key of the
// size-th smallest of the keys above from (all keys when started is
// false), and whether any key is left.
func NextTo(keys []uint64, from uint64, started bool, size int) (uint64, bool) {
	var pending []uint64
	for _, k := range keys {
		if !started || k > from {
			pending = append(pending, k)
		}
	}
	if len(pending) == 0 {
		return 0, false
	}
	slices.Sort(pending)
	return pending[min(size, len(pending))-1], true
}
