package bench

// This file holds the CPU profiles of kube-apiserver that --apiserver-cpuprofile
// takes during the floors and the convergence, so that what the host costs
// the API server can be compared, function by function, with what a plain
// client's POSTs and applies cost it.

import (
	"context"
	"fmt"
	"os"
	"strconv"
)

// apiServerProfile starts a CPU profile of kube-apiserver, taken through
// its /debug/pprof endpoint as the administrator over the first
// APIServerProfileSeconds of a phase, and returns what waits for it and
// writes it to APIServerProfile with the regime and phase added to the
// name. It returns a no-op when no profile is asked for. The profile runs
// beside the phase; the phase's own clock does not wait for it.
func (b *bench) apiServerProfile(ctx context.Context, phase string) func() error {
	if b.APIServerProfile == "" {
		return func() error { return nil }
	}
	path := fmt.Sprintf("%s.%s.%s", b.APIServerProfile, b.regime, phase)
	done := make(chan error, 1)
	go func() {
		data, err := b.cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(b.APIServerProfileSeconds)).DoRaw(ctx)
		if err != nil {
			done <- fmt.Errorf("kube-apiserver profile %s: %w", phase, err)
			return
		}
		done <- os.WriteFile(path, data, 0o644)
	}()
	return func() error {
		if err := <-done; err != nil {
			return err
		}
		fmt.Fprintf(b.Out, "  kube-apiserver CPU profile of the first %d s: %s\n", b.APIServerProfileSeconds, path)
		return nil
	}
}
