package bench

import (
	"testing"
	"time"
)

// sink keeps the test's allocation from being optimised away.
var sink []byte

// TestAllocationPerObject: a phase's heap allocation is what this process
// allocated between the two readings, and its share per object written.
func TestAllocationPerObject(t *testing.T) {
	s, err := sampleCPU()
	if err != nil {
		t.Fatal(err)
	}
	for range 64 {
		sink = make([]byte, 1<<20)
	}
	p := newPhase(time.Second, 32, cpuSince(s))
	if p.CPU.AllocatedMiB < 64 || p.CPU.AllocatedMiB > 80 {
		t.Errorf("allocated %.1f MiB over 64 allocations of 1 MiB, want 64 to 80", p.CPU.AllocatedMiB)
	}
	if want := p.CPU.AllocatedMiB * 1024 / 32; p.AllocatedKiBPerObject != want {
		t.Errorf("allocated %.1f KiB per object, want %.1f (%.1f MiB over 32 objects)", p.AllocatedKiBPerObject, want, p.CPU.AllocatedMiB)
	}
	if p.ObjectsPerSecond != 32 {
		t.Errorf("%.1f objects/s, want 32", p.ObjectsPerSecond)
	}
	if none := newPhase(time.Second, 0, p.CPU); none.AllocatedKiBPerObject != 0 {
		t.Errorf("a phase of no objects: %.1f KiB per object, want 0", none.AllocatedKiBPerObject)
	}
}
