package bench

// This file holds the scale table: the figures of runs at different
// numbers of Profiles side by side, each cost per object against the
// smallest run's.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Scale targets: a cost per object grows by at most scaleDrift from the
// smallest run to the largest (linear growth), and the host alone holds
// at most targetHeapPerObjectKiB of heap and grows its RSS by at most
// rssSlopeLimitKiB per owned object.
const (
	scaleDrift       = 0.10
	rssSlopeLimitKiB = 2.0
)

// scaleFigure is one row of the scale table.
type scaleFigure struct {
	name string
	// format prints a value.
	format string
	// value is the figure of a run; false when the run has none.
	value func(r *Result) (float64, bool)
	// perObject marks a cost per object (or per Profile), which must stay
	// within scaleDrift of the smallest run's; the others are shown, and
	// latencies are compared the same way, since a new Profile should not
	// wait longer on a larger host.
	perObject bool
	// limit bounds the value, when not 0.
	limit float64
}

func positive(v float64) (float64, bool) { return v, v > 0 }

var scaleFigures = []scaleFigure{
	{name: "convergence, s per 1,000 objects", format: "%.3f", perObject: true, value: func(r *Result) (float64, bool) {
		if r.Convergence.ObjectsPerSecond <= 0 {
			return 0, false
		}
		return 1000 / r.Convergence.ObjectsPerSecond, true
	}},
	{name: "apply floor (plain client), s per 1,000 objects", format: "%.3f", value: func(r *Result) (float64, bool) {
		if r.ApplyFloor == nil || r.ApplyFloor.ObjectsPerSecond <= 0 {
			return 0, false
		}
		return 1000 / r.ApplyFloor.ObjectsPerSecond, true
	}},
	{name: "convergence / apply floor (same run)", format: "%.2fx", value: func(r *Result) (float64, bool) {
		return positive(r.Ratios.ConvergenceOverApplyFloor)
	}},
	{name: "host CPU per object, ms", format: "%.3f", perObject: true, value: func(r *Result) (float64, bool) {
		return perObject(r.Convergence.CPU.HostAndBench*1000, r.Objects)
	}},
	{name: "POST floor client CPU per object, ms (same process)", format: "%.3f", value: func(r *Result) (float64, bool) {
		return perObject(r.Floor.CPU.HostAndBench*1000, r.Objects)
	}},
	{name: "host CPU / POST floor client's (same run)", format: "%.2fx", perObject: true, value: func(r *Result) (float64, bool) {
		host, ok := perObject(r.Convergence.CPU.HostAndBench, r.Objects)
		floor, ok2 := perObject(r.Floor.CPU.HostAndBench, r.Objects)
		if !ok || !ok2 {
			return 0, false
		}
		return host / floor, true
	}},
	{name: "API server CPU per object, ms", format: "%.3f", perObject: true, value: func(r *Result) (float64, bool) {
		return perObject(r.Convergence.CPU.APIServer*1000, r.Objects)
	}},
	{name: "API server CPU per object of the apply floor, ms", format: "%.3f", value: func(r *Result) (float64, bool) {
		if r.ApplyFloor == nil {
			return 0, false
		}
		return perObject(r.ApplyFloor.CPU.APIServer*1000, r.Objects)
	}},
	{name: "host heap in use per owned object, KiB", format: "%.2f", perObject: true, limit: targetHeapPerObjectKiB, value: func(r *Result) (float64, bool) {
		if r.HostProcess == nil {
			return 0, false
		}
		return positive(r.HostProcess.HeapPerObjectKiB)
	}},
	{name: "host live heap per owned object, KiB", format: "%.2f", perObject: true, value: func(r *Result) (float64, bool) {
		if r.HostProcess == nil {
			return 0, false
		}
		return positive(r.HostProcess.HeapAllocPerObjectKiB)
	}},
	{name: "host RSS per owned object, KiB", format: "%.2f", perObject: true, value: func(r *Result) (float64, bool) {
		if r.HostProcess == nil {
			return 0, false
		}
		return perObject(r.HostProcess.RSSMiB*1024, r.Objects)
	}},
	{name: "cold restart (full pass, nothing changed), s per 1,000 Profiles", format: "%.2f", perObject: true, value: func(r *Result) (float64, bool) {
		return perObject(r.Steady.Seconds*1000, r.Profiles)
	}},
	{name: "peak heap of the cold restart per object, KiB (host + bench)", format: "%.2f", perObject: true, value: func(r *Result) (float64, bool) {
		return perObject(r.Steady.PeakHeapMiB*1024, r.Objects)
	}},
	{name: "host-wide change, s per 1,000 ResourceQuotas", format: "%.2f", perObject: true, value: func(r *Result) (float64, bool) {
		if r.HostChange == nil || r.HostChange.ObjectsPerSecond <= 0 {
			return 0, false
		}
		return 1000 / r.HostChange.ObjectsPerSecond, true
	}},
	{name: "drift repair p99, s", format: "%.3f", value: func(r *Result) (float64, bool) { return positive(r.Drift.All.P99) }},
	{name: "new Profile ready, idle host, p50, s", format: "%.2f", perObject: true, value: latencyOf(func(l *NewProfileLatency) *Latency { return l.Idle }, false)},
	{name: "new Profile ready, idle host, p99, s", format: "%.2f", value: latencyOf(func(l *NewProfileLatency) *Latency { return l.Idle }, true)},
	{name: "new Profile ready, during bulk convergence, p50, s", format: "%.2f", value: latencyOf(func(l *NewProfileLatency) *Latency { return l.Bulk }, false)},
	{name: "new Profile ready, during bulk convergence, p99, s", format: "%.2f", value: latencyOf(func(l *NewProfileLatency) *Latency { return l.Bulk }, true)},
	{name: "new Profile ready, during a host-wide change, p99, s", format: "%.2f", value: latencyOf(func(l *NewProfileLatency) *Latency { return l.Rollout }, true)},
}

func perObject(total float64, n int) (float64, bool) {
	if n <= 0 || total <= 0 {
		return 0, false
	}
	return total / float64(n), true
}

func latencyOf(set func(*NewProfileLatency) *Latency, p99 bool) func(*Result) (float64, bool) {
	return func(r *Result) (float64, bool) {
		if r.Latency == nil || set(r.Latency) == nil || set(r.Latency).N == 0 {
			return 0, false
		}
		l := set(r.Latency)
		if p99 {
			return l.P99, true
		}
		return l.P50, true
	}
}

// ReadResults reads saved results, smallest number of Profiles first.
func ReadResults(paths []string) ([]*Result, error) {
	var out []*Result
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		r := &Result{}
		if err := json.Unmarshal(data, r); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b *Result) int { return a.Profiles - b.Profiles })
	return out, nil
}

// WriteScale prints runs side by side as a Markdown table: each figure per
// run, the largest run's over the smallest's, and the verdict against the
// scale targets. It reports whether every target holds.
func WriteScale(w io.Writer, runs []*Result) bool {
	if len(runs) == 0 {
		return false
	}
	first, last := runs[0], runs[len(runs)-1]
	head := []string{"figure"}
	for _, r := range runs {
		head = append(head, fmt.Sprintf("%d Profiles (%s)", r.Profiles, r.Revision))
	}
	head = append(head, fmt.Sprintf("%d / %d", last.Profiles, first.Profiles), "target")
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	ok := true
	for _, f := range scaleFigures {
		cells := []string{f.name}
		for _, r := range runs {
			v, has := f.value(r)
			cells = append(cells, cell(f.format, v, has))
		}
		a, hasA := f.value(first)
		b, hasB := f.value(last)
		ratio, target := "", ""
		if hasA && hasB && len(runs) > 1 {
			ratio = fmt.Sprintf("%.2f", b/a)
			if f.perObject {
				good := b/a <= 1+scaleDrift
				ok = ok && good
				target = fmt.Sprintf("<= %.2f %s", 1+scaleDrift, verdict(good))
			}
		}
		if f.limit > 0 && hasB {
			good := b <= f.limit
			ok = ok && good
			target = strings.TrimSpace(target + fmt.Sprintf(" value <= %g %s", f.limit, verdict(good)))
		}
		cells = append(cells, ratio, target)
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	if slope, has := rssSlope(first, last); has {
		good := slope <= rssSlopeLimitKiB
		ok = ok && good
		fmt.Fprintf(w, "| host RSS slope from %d to %d Profiles, KiB per owned object |%s %.2f | <= %g %s |\n",
			first.Profiles, last.Profiles, strings.Repeat(" |", len(runs)), slope, rssSlopeLimitKiB, verdict(good))
	}
	return ok
}

// rssSlope is the host process's RSS growth per owned object from run a
// to run b.
func rssSlope(a, b *Result) (float64, bool) {
	if a.HostProcess == nil || b.HostProcess == nil || b.Objects <= a.Objects {
		return 0, false
	}
	return (b.HostProcess.RSSMiB - a.HostProcess.RSSMiB) * 1024 / float64(b.Objects-a.Objects), true
}

func cell(format string, v float64, has bool) string {
	if !has {
		return "-"
	}
	return fmt.Sprintf(format, v)
}
