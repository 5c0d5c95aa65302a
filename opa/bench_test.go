package opa

import (
	"fmt"
	"testing"
)

// oneNamespace returns n grants of n buckets, all read by one namespace: the
// shape of a gateway document that grants a team every bucket it has. It is
// built as NewGrants builds it, without the validation, which under the
// race detector would take most of the test's time.
func oneNamespace(tb testing.TB, n int) Grants {
	tb.Helper()
	buckets := make([]Bucket, n)
	access := make([]Access, n)
	for i := range buckets {
		name := fmt.Sprintf("bucket-%07d", i)
		buckets[i] = Bucket{Name: name, Volume: name, Readers: []string{"team-a"}}
		access[i] = Access{Bucket: buckets[i], Mode: ReadOnly}
	}
	return Grants{buckets: buckets, access: map[string][]Access{"team-a": access}, n: n}
}

// grantSizes are the sizes measured: 227,940 is a 10 MB document seen on a
// real gateway.
var grantSizes = []int{10_000, 40_000, 227_940}

// BenchmarkDropped counts the grants a document withdraws from the last
// snapshot, with one namespace holding every grant.
func BenchmarkDropped(b *testing.B) {
	for _, n := range grantSizes {
		old := oneNamespace(b, n)
		next := oneNamespace(b, n-n/100)
		b.Run(fmt.Sprintf("grants=%d", n), func(b *testing.B) {
			for b.Loop() {
				if got := Dropped(old, next); got != n/100 {
					b.Fatalf("Dropped = %d, want %d", got, n/100)
				}
			}
		})
	}
}

// BenchmarkOffer takes a changed document under the source rules: the drop
// guard, the namespaces to notify and the swap of the snapshot.
func BenchmarkOffer(b *testing.B) {
	for _, n := range grantSizes {
		gs := [2]Grants{oneNamespace(b, n), oneNamespace(b, n-n/100)}
		b.Run(fmt.Sprintf("grants=%d", n), func(b *testing.B) {
			tr := &tracker{name: "bench", maxDrop: DefaultMaxDropShare}
			ctx := b.Context()
			tr.offer(ctx, gs[0], nil)
			i := 1
			for b.Loop() {
				tr.offer(ctx, gs[i%2], nil)
				i++
			}
			if st := tr.State(); st.Err != nil {
				b.Fatal(st.Err)
			}
		})
	}
}
