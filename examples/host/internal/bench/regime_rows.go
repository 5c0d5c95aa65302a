package bench

// This file holds a regime's rows in the results table, with the targets
// they are compared with.

import (
	"fmt"
	"strings"
)

// The targets the table compares the figures with: those of a regime are
// for the unthrottled one.
const (
	targetOverFloor        = 1.5
	targetOverApplyFloor   = 1.15
	targetHostCPUOverFloor = 1.5
	// targetOwnOverhead bounds the host's own overhead: the convergence /
	// apply floor ratio over the one a host as cheap as the plain client
	// would measure (Regime.HostOwnOverhead).
	targetOwnOverhead    = 1.08
	targetRequestsPerObj = 1.05
	targetIdleP99        = 0.3
	targetBusyP99        = 1.0
	// targetChangeOverFloor is the host-wide change's objects/s over the
	// unthrottled POST floor's.
	targetChangeOverFloor = 2.0 / 3
	// targetHeapPerObjectKiB bounds the host process's heap in use, after
	// a garbage collection, over the objects it owns: in every run, and in
	// the scale table.
	targetHeapPerObjectKiB = 1.5
)

// boundNote says what the convergence / apply floor ratios of a host of no
// CPU (server) and of one as cheap as the plain client (plain) tell of the
// 1.15x target.
func boundNote(server, plain float64) string {
	switch {
	case server == 0:
		return ""
	case server > targetOverApplyFloor:
		return "above 1.15x: out of any host's reach"
	case plain > targetOverApplyFloor:
		return "above 1.15x: needs a host cheaper than a plain client"
	}
	return ""
}

// regimeRows prints one regime's figures next to their targets.
func regimeRows(row func(name, value, target string), g Regime) {
	where := "on the run's control plane"
	if g.ControlPlane == "fresh" {
		where = "on a fresh control plane"
	}
	row(fmt.Sprintf("regime %s (%g QPS / %d burst, %s)", g.Name, g.QPS, g.Burst, where), "", "")
	unthrottled := g.Name == RegimeUnthrottled
	// The targets hold for the unthrottled regime; the limited one shows
	// them for reference.
	target := func(t string, ok bool) string {
		if !unthrottled {
			return t + " (unthrottled)"
		}
		return t + " " + verdict(ok)
	}
	if g.Incomplete != nil {
		row("  convergence STOPPED AT LIMIT", fmt.Sprintf("%.1f s: %d Profiles ready, %d of %d objects present, %.0f objects/s",
			g.Convergence.Seconds, g.Incomplete.ReadyProfiles, g.Incomplete.ObjectsPresent, g.Objects, g.Convergence.ObjectsPerSecond), "")
	} else {
		row("  convergence", fmt.Sprintf("%.1f s, %.0f objects/s", g.Convergence.Seconds, g.Convergence.ObjectsPerSecond), "")
	}
	row("  POST floor (plain client)", fmt.Sprintf("%.1f s, %.0f objects/s", g.Floor.Seconds, g.Floor.ObjectsPerSecond), "")
	row("  apply floor (plain client, server-side apply)", fmt.Sprintf("%.1f s, %.0f objects/s", g.ApplyFloor.Seconds, g.ApplyFloor.ObjectsPerSecond), "")
	if in := g.ProfilesAlone; in != nil {
		row("  the Profiles alone (created with no host running)", fmt.Sprintf("%.1f s, CPU s: API server %.1f, etcd %.1f, client %.1f",
			in.Seconds, in.CPU.APIServer, in.CPU.Etcd, in.CPU.HostAndBench), "")
	}
	row("  convergence / POST floor", fmt.Sprintf("%.2fx", g.ConvergenceOverFloor), target("<= 1.5x", g.ConvergenceOverFloor <= targetOverFloor))
	row("  convergence / apply floor", fmt.Sprintf("%.2fx", g.ConvergenceOverApplyFloor), target("<= 1.15x", g.ConvergenceOverApplyFloor <= targetOverApplyFloor))
	a, h := g.APIServerCPUPerObjectMs, g.HostCPUPerObjectMs
	row("  API server CPU per object (conv / POST / apply floor)", fmt.Sprintf("%.2f / %.2f / %.2f ms", a.Convergence, a.Floor, a.ApplyFloor), "")
	row("  host+bench CPU per object (conv / POST / apply floor client)", fmt.Sprintf("%.2f / %.2f / %.2f ms", h.Convergence, h.Floor, h.ApplyFloor), "")
	row("    with a host of no CPU / of a plain client's CPU", fmt.Sprintf("%.2fx / %.2fx (busy %.0f%% / %.0f%%)",
		g.ServerBoundOverApplyFloor, g.PlainClientBoundOverApplyFloor, 100*g.Convergence.CPU.BusyShare, 100*g.ApplyFloor.CPU.BusyShare),
		boundNote(g.ServerBoundOverApplyFloor, g.PlainClientBoundOverApplyFloor))
	if g.HostOwnOverhead > 0 {
		row("    host's own overhead (convergence / apply floor over a plain client's)", fmt.Sprintf("%.2f", g.HostOwnOverhead), target("<= 1.08", g.HostOwnOverhead <= targetOwnOverhead))
	}
	row("  host CPU / POST floor client's", fmt.Sprintf("%.2fx", g.HostCPUOverFloorClient), target("<= 1.5x", g.HostCPUOverFloorClient <= targetHostCPUOverFloor))
	if w := g.WatchedFloor; w != nil && g.WatchedFloorCPUOverFloorClient > 0 {
		row("  watched floor (POST floor's client, the host's cache watching)", fmt.Sprintf("%.1f s, %.0f objects/s", w.Seconds, w.ObjectsPerSecond), "")
		row("    its CPU / POST floor client's; host CPU / its", fmt.Sprintf("%.2fx; %.2fx", g.WatchedFloorCPUOverFloorClient, g.HostCPUOverFloorClient/g.WatchedFloorCPUOverFloorClient), "")
	}
	row("  host requests per object (all verbs)", fmt.Sprintf("%.3f (%.3f mutating)", g.RequestsPerObject, g.MutatingPerObject), target("<= 1.05", g.RequestsPerObject <= targetRequestsPerObj))
	row("    beside the status writes", fmt.Sprintf("%.3f", g.RequestsPerObjectBesideStatus), "")
	least := ""
	if g.LeastRequestsPerObject > targetRequestsPerObj {
		least = "above 1.05: out of any host's reach"
	}
	row("    least possible (one apply per object, one status write per Profile)", fmt.Sprintf("%.3f", g.LeastRequestsPerObject), least)
	row("  status writes per Profile", fmt.Sprintf("%.2f", g.StatusWritesPerProfile), "1 "+verdict(g.StatusWritesPerProfile <= 1))
	row("  host requests answered 409", fmt.Sprintf("%d", g.Conflicts), "")
	if m := g.Median; m != nil {
		list := func(of func(Round) float64) string {
			parts := make([]string, len(g.Rounds))
			for i, r := range g.Rounds {
				parts[i] = fmt.Sprintf("%.2f", of(r))
			}
			return strings.Join(parts, ", ")
		}
		row(fmt.Sprintf("  over %d rounds: median (each round)", len(g.Rounds)), "", "")
		row("    convergence / POST floor", fmt.Sprintf("%.2fx (%s)", m.ConvergenceOverFloor, list(func(r Round) float64 { return r.ConvergenceOverFloor })),
			target("<= 1.5x", m.ConvergenceOverFloor <= targetOverFloor))
		row("    convergence / apply floor", fmt.Sprintf("%.2fx (%s)", m.ConvergenceOverApplyFloor, list(func(r Round) float64 { return r.ConvergenceOverApplyFloor })),
			target("<= 1.15x", m.ConvergenceOverApplyFloor <= targetOverApplyFloor))
		row("      with a host of no CPU / of a plain client's CPU", fmt.Sprintf("%.2fx / %.2fx", m.ServerBoundOverApplyFloor, m.PlainClientBoundOverApplyFloor),
			boundNote(m.ServerBoundOverApplyFloor, m.PlainClientBoundOverApplyFloor))
		if m.HostOwnOverhead > 0 {
			row("      host's own overhead", fmt.Sprintf("%.2f (%s)", m.HostOwnOverhead, list(func(r Round) float64 { return r.HostOwnOverhead })),
				target("<= 1.08", m.HostOwnOverhead <= targetOwnOverhead))
		}
		row("    host CPU / POST floor client's", fmt.Sprintf("%.2fx (%s)", m.HostCPUOverFloorClient, list(func(r Round) float64 { return r.HostCPUOverFloorClient })),
			target("<= 1.5x", m.HostCPUOverFloorClient <= targetHostCPUOverFloor))
		if m.WatchedFloorCPUOverFloorClient > 0 {
			row("    watched floor CPU / POST floor client's", fmt.Sprintf("%.2fx (%s)", m.WatchedFloorCPUOverFloorClient, list(func(r Round) float64 { return r.WatchedFloorCPUOverFloorClient })), "")
		}
		row("    convergence, POST floor, apply floor", fmt.Sprintf("%.1f s, %.1f s, %.1f s", m.ConvergenceSeconds, m.FloorSeconds, m.ApplyFloorSeconds), "")
	}
	if c := g.HostChange; c != nil {
		row("  host-wide change (quota defaults), restart", fmt.Sprintf("%d ResourceQuotas, %.2f s from sync (%.1f s from start), %.0f objects/s",
			c.Changed, c.SecondsFromSync, c.Seconds, c.ObjectsPerSecond), "")
		if c.ObjectsPerSecondFromFirst > 0 {
			row("    from the first change to the last", fmt.Sprintf("%.2f s, %.0f objects/s", c.SecondsFromFirst, c.ObjectsPerSecondFromFirst), "")
		}
		if c.OverUnthrottledFloor > 0 {
			row("    / unthrottled POST floor's objects/s", fmt.Sprintf("%.2f", c.OverUnthrottledFloor), target(">= 0.67", c.OverUnthrottledFloor >= targetChangeOverFloor))
		} else {
			row("    / unthrottled POST floor's objects/s", "n/a (unthrottled regime not run)", "")
		}
		if g.Name == RegimeLimited {
			row("    / configured QPS", fmt.Sprintf("%.2f", c.OverQPS), ">= 1 "+verdict(c.OverQPS >= 1))
		}
		per := 0.0
		if c.Changed > 0 {
			per = float64(c.MutatingRequests) / float64(c.Changed)
		}
		row("    mutating requests per changed object", fmt.Sprintf("%.2f (%d)", per, c.MutatingRequests), "1 "+verdict(c.MutatingRequests == c.Changed))
		if c.ProbedObjectsPerSecond > 0 {
			row("    a second rollout, beside the rollout probe", fmt.Sprintf("%.0f objects/s", c.ProbedObjectsPerSecond), "")
		}
	}
}

// latencyRows prints the new-Profile latency sets.
func latencyRows(row func(name, value, target string), l *NewProfileLatency) {
	row(fmt.Sprintf("new Profile -> every condition True, Ready included (regime %s)", l.Regime), "", "")
	set := func(name string, s *Latency, limit float64, t string) {
		if s == nil {
			row("  "+name, "not measured", "")
			return
		}
		row("  "+name+" p50 / p99 / max", fmt.Sprintf("%s / %s / %s; %d of %d not ready within %s",
			secs(s.P50), secs(s.P99), secs(s.Max), s.NotReady, s.N, secs(l.TimeoutSeconds)),
			fmt.Sprintf("p99 <= %s %s", t, verdict(s.P99 <= limit && s.NotReady == 0)))
	}
	set("idle", l.Idle, targetIdleP99, "300ms")
	set("during the host-wide change", l.Rollout, targetBusyP99, "1s")
	set("during the bulk convergence", l.Bulk, targetBusyP99, "1s")
}

// regimeNames lists the regimes of a run.
func regimeNames(gs []Regime) string {
	names := make([]string, len(gs))
	for i, g := range gs {
		names[i] = g.Name
	}
	return strings.Join(names, ", ")
}
