package bench

import (
	"strings"
	"testing"
)

func scaleRun(profiles, objects int, hostCPU, heapKiB, rssMiB float64) *Result {
	return &Result{
		Profiles: profiles, Objects: objects, Revision: "abc",
		Convergence: Phase{ObjectsPerSecond: 400, CPU: CPU{HostAndBench: hostCPU, APIServer: float64(objects) * 0.003}},
		HostProcess: &HostProcess{HeapPerObjectKiB: heapKiB, RSSMiB: rssMiB},
		Steady:      Steady{Seconds: float64(profiles) / 250},
	}
}

// The table puts each figure of each run side by side, divides the
// largest run's by the smallest's, and holds costs per object to 10%
// growth, the heap to 1.5 KiB and the RSS slope to 2 KiB per owned object.
func TestWriteScale(t *testing.T) {
	small := scaleRun(1000, 23000, 23, 1.4, 200)
	for _, tc := range []struct {
		name   string
		large  *Result
		ok     bool
		inRows []string
	}{
		{"linear", scaleRun(10000, 230000, 230, 1.3, 200+207000*1.5/1024), true, []string{
			"| host CPU per object, ms | 1.000 | 1.000 | 1.00 | <= 1.10 ok |",
			"| host RSS slope from 1000 to 10000 Profiles, KiB per owned object | | | 1.50 | <= 2 ok |",
		}},
		{"CPU per object grows by a fifth", scaleRun(10000, 230000, 276, 1.3, 400), false, []string{
			"| host CPU per object, ms | 1.000 | 1.200 | 1.20 | <= 1.10 MISSED |",
		}},
		{"heap over its bound", scaleRun(10000, 230000, 230, 1.52, 400), false, []string{
			"| host heap in use per owned object, KiB | 1.40 | 1.52 | 1.09 | <= 1.10 ok value <= 1.5 MISSED |",
		}},
		{"RSS grows too fast", scaleRun(10000, 230000, 230, 1.4, 200+207000*2.5/1024), false, []string{
			"KiB per owned object | | | 2.50 | <= 2 MISSED |",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			ok := WriteScale(&b, []*Result{small, tc.large})
			if ok != tc.ok {
				t.Errorf("WriteScale = %v, want %v:\n%s", ok, tc.ok, b.String())
			}
			for _, row := range tc.inRows {
				if !strings.Contains(b.String(), row) {
					t.Errorf("no row %q in\n%s", row, b.String())
				}
			}
		})
	}
}
