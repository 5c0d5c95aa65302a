package bench

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// verdict marks a figure against its target.
func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}

// WriteTable prints the result for people.
func (r *Result) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "\n== result: %d Profiles, %d objects (%s), %d plugins, regimes %s, %d workers, %d CPUs, revision %s\n",
		r.Profiles, r.Objects, kindSummary(r.ObjectsByKind), len(r.Plugins), regimeNames(r.Regimes), r.Workers, r.CPUs, r.Revision)
	if r.HostRevision != "" && r.HostRevision != r.Revision {
		fmt.Fprintf(w, "the host process ran revision %s\n", r.HostRevision)
	}
	if r.FreshPhases {
		fmt.Fprintln(w, "each floor and each convergence ran on an empty control plane of its own")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tVALUE\tTARGET\t")
	row := func(name, value, target string) { fmt.Fprintf(tw, "%s\t%s\t%s\t\n", name, value, target) }
	for _, g := range r.Regimes {
		regimeRows(row, g)
	}
	row(fmt.Sprintf("regime %s: more on its convergence", r.Regime), "", "")
	row("  speed / StatCan (5 objects/s)", fmt.Sprintf("%.0fx", r.Ratios.SpeedupOverStatCan), ">= 20x "+verdict(r.Ratios.SpeedupOverStatCan >= 20))
	row("  POST floor / design anchor (470 objects/s)", fmt.Sprintf("%.2fx", r.Ratios.FloorOverAnchor), "")
	row("  CPU taken by other processes", fmt.Sprintf("convergence %.0f%%, floor %.0f%% of the machine", 100*share(r.Convergence.CPU), 100*share(r.Floor.CPU)), "")
	row("  host requests (client side)", fmt.Sprintf("%d, %d mutating, %d answered 409", r.Requests.ClientTotal, r.Requests.ClientMutating, countsTotal(r.Requests.Conflicts)), "")
	if r.Incomplete == nil {
		row("  API server requests (its /metrics)", fmt.Sprintf("%d, %d mutating", r.Requests.ServerTotal, r.Requests.ServerMutating), "")
	}
	row("  mutating requests per object", fmt.Sprintf("%.2f", r.Requests.MutatingPerObject), "<= 1.2 "+verdict(r.Requests.MutatingPerObject <= 1.2))
	row(fmt.Sprintf("regime %s: later phases", r.Regime), "", "")
	if r.Incomplete != nil {
		_ = tw.Flush()
		fmt.Fprintf(w, "(convergence stopped at its limit: requests are the host's so far, per object present; later phases not run)\n")
		fmt.Fprintf(w, "\nconvergence %s\nfloor       %s\n", r.Convergence.CPU, r.Floor.CPU)
		return
	}
	row("resync, nothing changed", fmt.Sprintf("%d reconciles in %.1f s", r.Steady.Reconciles, r.Steady.Seconds), "")
	row("  mutating requests (client side)", fmt.Sprintf("%d", r.Steady.MutatingRequests), "0 "+verdict(r.Steady.MutatingRequests == 0))
	row("  mutating on Profiles/Events (server)", fmt.Sprintf("%d", r.Steady.ServerMutatingHost), "0 "+verdict(r.Steady.ServerMutatingHost == 0))
	if r.Steady.PeakHeapMiB > 0 {
		row("  peak heap during the cold restart", fmt.Sprintf("%.1f MiB (host + benchmark client)", r.Steady.PeakHeapMiB), "")
	}
	if r.Latency != nil {
		latencyRows(row, r.Latency)
	}
	row("drift repaired", fmt.Sprintf("%d of %d", r.Drift.Repaired, r.Drift.Changed), "all "+verdict(r.Drift.Repaired == r.Drift.Changed))
	row("  p50 / p99 / max", fmt.Sprintf("%s / %s / %s", secs(r.Drift.All.P50), secs(r.Drift.All.P99), secs(r.Drift.All.Max)), "p99 <= 2s "+verdict(r.Drift.All.P99 <= 2))
	row("  deleted p50 / p99", fmt.Sprintf("%s / %s", secs(r.Drift.Deleted.P50), secs(r.Drift.Deleted.P99)), "")
	row("  edited p50 / p99", fmt.Sprintf("%s / %s", secs(r.Drift.Edited.P50), secs(r.Drift.Edited.P99)), "")
	where := "process (host + benchmark client)"
	row("heap in use, "+where, fmt.Sprintf("%.1f MiB", r.Memory.HeapInuseMiB), "")
	row("RSS, "+where, fmt.Sprintf("%.1f MiB", r.Memory.RSSMiB), "")
	row(fmt.Sprintf("after %d unrelated Secrets/ConfigMaps", r.Memory.Unrelated),
		fmt.Sprintf("heap %.1f MiB (x%.3f), RSS %.1f MiB", r.Memory.HeapInuseAfterMiB, r.Memory.HeapGrowth, r.Memory.RSSAfterMiB),
		"x1.0 "+verdict(r.Memory.HeapGrowth <= 1.05))
	if hp := r.HostProcess; hp != nil {
		row("RSS, host alone (profilekit run)", fmt.Sprintf("%.1f MiB", hp.RSSMiB), "")
		row(fmt.Sprintf("  after %d unrelated objects", r.Memory.Unrelated), fmt.Sprintf("%.1f MiB (x%.3f)", hp.RSSAfterMiB, hp.RSSGrowth), "x1.0 "+verdict(hp.RSSGrowth <= 1.05))
		row("  heap in use, host alone (after GC)", fmt.Sprintf("%.1f -> %.1f MiB", hp.HeapInuseMiB, hp.HeapInuseAfterMiB), "")
		row("  heap per owned object, host alone", fmt.Sprintf("%.2f KiB in use, %.2f KiB live (%.1f MiB)", hp.HeapPerObjectKiB, hp.HeapAllocPerObjectKiB, hp.HeapAllocMiB),
			fmt.Sprintf("<= %.1f KiB %s", targetHeapPerObjectKiB, verdict(hp.HeapPerObjectKiB <= targetHeapPerObjectKiB)))
	}
	row("  host requests on Secrets/ConfigMaps", fmt.Sprintf("%d", r.Memory.HostRequestsForUnrelated), "0 "+verdict(r.Memory.HostRequestsForUnrelated == 0))
	_ = tw.Flush()

	fmt.Fprintf(w, "\nconvergence %s\nfloor       %s\n", r.Convergence.CPU, r.Floor.CPU)
	fmt.Fprintf(w, "\nrequests during convergence, by verb and resource\n")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "VERB\tRESOURCE\tHOST (CLIENT)\tAPI SERVER\t")
	type pair struct{ c, s int }
	rows := map[requestKey]*pair{}
	for _, c := range r.Requests.Client {
		rows[requestKey{c.Verb, c.Resource}] = &pair{c: c.N}
	}
	for _, c := range r.Requests.Server {
		k := requestKey{c.Verb, c.Resource}
		if rows[k] == nil {
			rows[k] = &pair{}
		}
		rows[k].s = c.N
	}
	keys := make([]requestKey, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b requestKey) int {
		return cmp.Or(cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Verb, b.Verb))
	})
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t\n", k.Verb, k.Resource, rows[k].c, rows[k].s)
	}
	_ = tw.Flush()
	if r.Reconciles != nil {
		r.Reconciles.write(w)
	}
}

func countsTotal(cs []Count) int {
	n := 0
	for _, c := range cs {
		n += c.N
	}
	return n
}

func kindSummary(m map[string]int) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", m[k], k)
	}
	return strings.Join(parts, ", ")
}

// share is the part of the machine's capacity that other processes took.
func share(c CPU) float64 {
	if c.Capacity == 0 {
		return 0
	}
	return c.Other / c.Capacity
}
