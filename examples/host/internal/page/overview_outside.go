package page

// This file holds the overview's outside systems: the calls the plugins
// made to systems outside the cluster (Azure, PostgreSQL, OPA, cloud IAM)
// and how many failed, read from the host's own metrics in process, since
// the replica started and over the last minutes.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The metrics plugins/outside counts every outside call in.
const (
	callsMetric    = "profilekit_outside_calls_total"
	durationMetric = "profilekit_outside_call_duration_seconds"
)

// How the counters are sampled for the recent error rates: as Start ticks
// and on views, no two samples within sampleGap, each kept for sampleKept;
// the rate is taken over recentWindow, or over at least a minute while the
// replica is younger.
const (
	sampleGap    = 15 * time.Second
	sampleKept   = 15 * time.Minute
	recentWindow = 5 * time.Minute
	leastWindow  = time.Minute
)

// callKey names the calls of one plugin to one system.
type callKey struct{ plugin, system string }

// callCounts are the counters of one callKey.
type callCounts struct {
	ok, errors, timeouts float64
	// seconds and timed are the duration histogram's sum and count.
	seconds, timed float64
}

func (c callCounts) calls() float64  { return c.ok + c.errors + c.timeouts }
func (c callCounts) failed() float64 { return c.errors + c.timeouts }

// gatherOutside reads the outside calls' counters from g.
func gatherOutside(g prometheus.Gatherer) (map[callKey]callCounts, error) {
	families, err := g.Gather()
	if err != nil {
		return nil, fmt.Errorf("read the host's metrics: %w", err)
	}
	out := map[callKey]callCounts{}
	for _, mf := range families {
		name := mf.GetName()
		if name != callsMetric && name != durationMetric {
			continue
		}
		for _, m := range mf.GetMetric() {
			var k callKey
			result := ""
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "plugin":
					k.plugin = l.GetValue()
				case "system":
					k.system = l.GetValue()
				case "result":
					result = l.GetValue()
				}
			}
			c := out[k]
			switch {
			case name == durationMetric:
				c.seconds, c.timed = m.GetHistogram().GetSampleSum(), float64(m.GetHistogram().GetSampleCount())
			case result == "ok":
				c.ok = m.GetCounter().GetValue()
			case result == "timeout":
				c.timeouts = m.GetCounter().GetValue()
			default:
				c.errors += m.GetCounter().GetValue()
			}
			out[k] = c
		}
	}
	return out, nil
}

// rates keeps samples of the counters, oldest first.
type rates struct {
	mu      sync.Mutex
	samples []sample
}

type sample struct {
	at     time.Time
	counts map[callKey]callCounts
}

// add keeps counts as sampled at now, unless the last sample is younger
// than sampleGap, and forgets those older than sampleKept.
func (r *rates) add(now time.Time, counts map[callKey]callCounts) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.samples); n > 0 && now.Sub(r.samples[n-1].at) < sampleGap {
		return
	}
	r.samples = slices.DeleteFunc(r.samples, func(s sample) bool { return now.Sub(s.at) > sampleKept })
	r.samples = append(r.samples, sample{at: now, counts: counts})
}

// base returns the sample the recent rates are taken from: the newest at
// least recentWindow old, else the oldest at least leastWindow old.
func (r *rates) base(now time.Time) (sample, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.samples) - 1; i >= 0; i-- {
		if now.Sub(r.samples[i].at) >= recentWindow {
			return r.samples[i], true
		}
	}
	if len(r.samples) > 0 && now.Sub(r.samples[0].at) >= leastWindow {
		return r.samples[0], true
	}
	return sample{}, false
}

// sample reads the counters and keeps them.
func (o *Overview) sample(now time.Time) {
	if counts, err := gatherOutside(o.opts.Metrics); err == nil {
		o.rates.add(now, counts)
	}
}

// outsideView is the outside systems' table.
type outsideView struct {
	Rows []outsideRow
	// Window is how far back the recent columns look ("5 min"); empty
	// while no sample is old enough.
	Window string
	// Problem says why the metrics could not be read.
	Problem string
	// Standby is set on a replica that does not lead: the leader makes
	// the outside calls, and its metrics count them.
	Standby bool
}

// outsideRow is one plugin's calls to one system.
type outsideRow struct {
	Plugin, System string
	// Since the replica started: calls, those that failed (errors and
	// timeouts) and their share.
	Calls, Errors, Timeouts int64
	Rate                    string
	// Over the window: calls, failed calls and their share.
	RecentCalls, RecentFailed int64
	RecentRate                string
	// Mean is the calls' mean duration.
	Mean string
	// Failing is set when calls failed in the window, or since the start
	// when there is no window yet.
	Failing bool
}

// outside reads the counters, keeps them as a sample, and compares them
// with the base sample; rows that fail lately come first.
func (o *Overview) outside(now time.Time) outsideView {
	counts, err := gatherOutside(o.opts.Metrics)
	if err != nil {
		return outsideView{Problem: err.Error()}
	}
	v := outsideView{Standby: !o.leads()}
	base, recent := o.rates.base(now)
	if recent {
		v.Window = fmt.Sprintf("%d min", int(now.Sub(base.at).Round(time.Minute)/time.Minute))
	}
	o.rates.add(now, counts)
	ratio := map[callKey]float64{}
	for k, c := range counts {
		row := outsideRow{Plugin: k.plugin, System: k.system, Calls: int64(c.calls()), Errors: int64(c.errors), Timeouts: int64(c.timeouts),
			Rate: percent(c.failed(), c.calls()), RecentRate: "—"}
		if c.timed > 0 {
			row.Mean = (time.Duration(c.seconds / c.timed * float64(time.Second))).Round(time.Millisecond).String()
		}
		row.Failing = c.failed() > 0
		ratio[k] = share(c.failed(), c.calls())
		if recent {
			b := base.counts[k]
			calls, failed := c.calls()-b.calls(), c.failed()-b.failed()
			row.RecentCalls, row.RecentFailed, row.RecentRate = int64(calls), int64(failed), percent(failed, calls)
			row.Failing = failed > 0
			ratio[k] = share(failed, calls)
		}
		v.Rows = append(v.Rows, row)
	}
	slices.SortFunc(v.Rows, func(a, b outsideRow) int {
		ka, kb := callKey{a.Plugin, a.System}, callKey{b.Plugin, b.System}
		return cmp.Or(cmp.Compare(ratio[kb], ratio[ka]), strings.Compare(a.Plugin, b.Plugin), strings.Compare(a.System, b.System))
	})
	return v
}

// leads reports whether this replica leads.
func (o *Overview) leads() bool {
	if o.opts.Elected == nil {
		return true
	}
	select {
	case <-o.opts.Elected:
		return true
	default:
		return false
	}
}

// share is part over whole, 0 when whole is.
func share(part, whole float64) float64 {
	if whole <= 0 {
		return 0
	}
	return part / whole
}

// percent renders part of whole as a percentage, "—" when whole is 0.
func percent(part, whole float64) string {
	if whole <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100*part/whole)
}
