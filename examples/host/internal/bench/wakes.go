package bench

// This file holds the convergence's reconciles per Profile, per plugin and
// per trigger: which events woke which plugin, read from the host's
// profilekit_plugin_reconciles_total.

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	dto "github.com/prometheus/client_model/go"
)

// reconcilesByTrigger is the metric of the host's passes by plugin and by
// the trigger of the first event that asked for each.
const reconcilesByTrigger = "profilekit_plugin_reconciles_total"

// wakeCounts are reconciles by plugin kind and trigger.
type wakeCounts map[string]map[string]float64

// readWakes reads the process's reconciles by plugin and trigger.
func readWakes() (wakeCounts, error) {
	fams, err := gatherRegistry()
	if err != nil {
		return nil, err
	}
	return wakesOf(fams), nil
}

// wakesOf picks profilekit_plugin_reconciles_total out of fams.
func wakesOf(fams []*dto.MetricFamily) wakeCounts {
	out := wakeCounts{}
	for _, f := range fams {
		if f.GetName() != reconcilesByTrigger {
			continue
		}
		for _, m := range f.GetMetric() {
			var plugin, trigger string
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "plugin":
					plugin = lp.GetValue()
				case "trigger":
					trigger = lp.GetValue()
				}
			}
			if out[plugin] == nil {
				out[plugin] = map[string]float64{}
			}
			out[plugin][trigger] += m.GetCounter().GetValue()
		}
	}
	return out
}

// since returns w less before.
func (w wakeCounts) since(before wakeCounts) wakeCounts {
	out := wakeCounts{}
	for p, ts := range w {
		for t, n := range ts {
			if d := n - before[p][t]; d > 0 {
				if out[p] == nil {
					out[p] = map[string]float64{}
				}
				out[p][t] = d
			}
		}
	}
	return out
}

// Reconciles are the convergence's reconciles per Profile: in all, per
// plugin, and per plugin and trigger (see the monitoring README's
// profilekit_plugin_reconciles_total for the triggers).
type Reconciles struct {
	// Profiles are those the host served during the convergence: the N
	// and the bulk latency probe's.
	Profiles   int                           `json:"profiles"`
	Plugins    int                           `json:"plugins"`
	PerProfile float64                       `json:"perProfile"`
	ByPlugin   map[string]float64            `json:"byPlugin"`
	ByTrigger  map[string]map[string]float64 `json:"byTrigger"`
}

// reconcilesOf returns the reconciles per Profile of w over profiles
// Profiles and plugins plugins.
func reconcilesOf(w wakeCounts, profiles, plugins int) *Reconciles {
	r := &Reconciles{Profiles: profiles, Plugins: plugins, ByPlugin: map[string]float64{}, ByTrigger: map[string]map[string]float64{}}
	n := float64(max(profiles, 1))
	for p, ts := range w {
		r.ByTrigger[p] = map[string]float64{}
		for t, c := range ts {
			r.ByTrigger[p][t] = c / n
			r.ByPlugin[p] += c / n
			r.PerProfile += c / n
		}
	}
	return r
}

// Target is the most reconciles per Profile the convergence should need:
// one per plugin, and two to spare for a look again after a cache that had
// not caught up.
func (r *Reconciles) Target() float64 { return float64(r.Plugins + 2) }

// write prints the reconciles per Profile by plugin, with each plugin's
// triggers, most first.
func (r *Reconciles) write(w io.Writer) {
	fmt.Fprintf(w, "\nreconciles per Profile during convergence: %.2f over %d plugins (target <= plugins + 2 = %.0f %s)\n",
		r.PerProfile, r.Plugins, r.Target(), verdict(r.PerProfile <= r.Target()))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLUGIN\tPER PROFILE\tBY TRIGGER\t")
	for _, p := range slices.Sorted(maps.Keys(r.ByPlugin)) {
		ts := slices.SortedFunc(maps.Keys(r.ByTrigger[p]), func(a, b string) int {
			return cmp.Or(cmp.Compare(r.ByTrigger[p][b], r.ByTrigger[p][a]), cmp.Compare(a, b))
		})
		parts := make([]string, len(ts))
		for i, t := range ts {
			parts[i] = fmt.Sprintf("%s %.2f", t, r.ByTrigger[p][t])
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%s\t\n", p, r.ByPlugin[p], strings.Join(parts, ", "))
	}
	_ = tw.Flush()
}
