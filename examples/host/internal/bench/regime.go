package bench

import (
	"fmt"
	"slices"
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

// Regime is the convergence of one client rate regime, next to its own
// floors: the same figures for the limited regime and the unthrottled one.
type Regime struct {
	// Name is "limited" (--kube-api-qps and --kube-api-burst) or
	// "unthrottled" (100000 both, for the host and the floors).
	Name  string  `json:"name"`
	QPS   float32 `json:"qps"`
	Burst int     `json:"burst"`
	// ControlPlane is "first" for the regime that ran every phase on the
	// run's control plane, "fresh" for one that ran its floors,
	// convergence and host-wide change on a control plane of its own.
	ControlPlane string `json:"controlPlane"`
	Objects      int    `json:"objects"`
	// Incomplete is set when the convergence stopped at --converge-limit.
	Incomplete  *Incomplete `json:"incomplete,omitempty"`
	Convergence Phase       `json:"convergence"`
	// Floor is the plain client creating the objects with POST;
	// ApplyFloor the same client sending them as server-side applies.
	Floor      Phase `json:"floor"`
	ApplyFloor Phase `json:"applyFloor"`
	// ProfilesAlone is the Profiles' creation with no host running
	// (Result.ProfilesAlone), when it was measured.
	ProfilesAlone *Phase `json:"profilesAlone,omitempty"`
	// WatchedFloor is the POST floor's client with a cache of the host's
	// options watching what it writes (Result.WatchedFloor), when it was
	// measured; WatchedFloorCPUOverFloorClient its CPU per object over the
	// POST floor client's: what watching its own writes costs before a
	// controller decides anything.
	WatchedFloor                   *Phase  `json:"watchedFloor,omitempty"`
	WatchedFloorCPUOverFloorClient float64 `json:"watchedFloorCpuOverFloorClient,omitempty"`
	// ConvergenceOverFloor and ConvergenceOverApplyFloor are convergence
	// time over each floor's (target <= 1.5 and <= 1.15 unthrottled).
	ConvergenceOverFloor      float64 `json:"convergenceOverFloor"`
	ConvergenceOverApplyFloor float64 `json:"convergenceOverApplyFloor"`
	// APIServerCPUPerObjectMs and HostCPUPerObjectMs are CPU milliseconds
	// per object of kube-apiserver and of the benchmark process (the host
	// and the benchmark's client during convergence, the floor client
	// during a floor).
	APIServerCPUPerObjectMs CPUPerObject `json:"apiServerCpuPerObjectMs"`
	HostCPUPerObjectMs      CPUPerObject `json:"hostAndBenchCpuPerObjectMs"`
	// HostCPUOverFloorClient is the host's CPU per object over the POST
	// floor client's (target <= 1.5).
	HostCPUOverFloorClient float64 `json:"hostCpuOverFloorClient"`
	// ServerBoundOverApplyFloor is the convergence / apply floor ratio that
	// a host spending no CPU at all would have measured in this run: the
	// API server's and etcd's CPU per object in the convergence over the
	// whole CPU per object of a plain client's work (API server, etcd and
	// the client): the apply floor, and the Profiles' creation when it was
	// measured (ProfilesAlone), the input the convergence's clock includes
	// and the floors do not write. PlainClientBoundOverApplyFloor adds that
	// client's CPU per object to the convergence's: a host as cheap as a
	// plain client that creates the Profiles and sends the applies. Both
	// hold when the machine is saturated in both phases (their busyShare
	// near 1), where a phase's time is its CPU over the machine's; the API
	// server's share is what serving a controller costs it (the Profiles'
	// status writes, the watches) beside the applies and the Profiles'
	// creation, which no host can leave out.
	ServerBoundOverApplyFloor      float64 `json:"serverBoundOverApplyFloor"`
	PlainClientBoundOverApplyFloor float64 `json:"plainClientBoundOverApplyFloor"`
	// HostOwnOverhead is the convergence / apply floor ratio over
	// PlainClientBoundOverApplyFloor: 1 is a host exactly as cheap as the
	// plain client, what is above it the host's own cost (target <= 1.08).
	HostOwnOverhead float64 `json:"hostOwnOverhead,omitempty"`
	// RequestsPerObject counts every request of the host (client side,
	// all verbs) per object (target <= 1.05); MutatingPerObject only the
	// writes.
	RequestsPerObject float64 `json:"requestsPerObject"`
	MutatingPerObject float64 `json:"mutatingPerObject"`
	// RequestsPerObjectBesideStatus leaves out the status writes: with few
	// objects per Profile, one status write per Profile alone is more than
	// the 0.05 per object that the target leaves (0.11 at 9 objects).
	RequestsPerObjectBesideStatus float64 `json:"requestsPerObjectBesideStatus"`
	// LeastRequestsPerObject is what one apply per object and one status
	// write per Profile come to per object: no host sends fewer.
	LeastRequestsPerObject float64 `json:"leastRequestsPerObject"`
	// StatusWritesPerProfile are the host's writes of profiles/status
	// (PUT, PATCH or apply) per Profile (target 1).
	StatusWritesPerProfile float64 `json:"statusWritesPerProfile"`
	// Conflicts are the host's requests answered 409.
	Conflicts int      `json:"conflicts"`
	Requests  Requests `json:"requests"`
	// HostChange is the restart with a changed quota default in this
	// regime.
	HostChange *HostChange `json:"hostWideChange,omitempty"`
	// Rounds are the figures of every round when the regime was measured
	// more than once (--rounds), the first round's (the figures above)
	// first; Median holds their medians.
	Rounds []Round `json:"rounds,omitempty"`
	Median *Round  `json:"median,omitempty"`
}

// Round is one measurement of a regime's floors and convergence, each on an
// empty control plane: the machine's speed moves between phases, so a
// ratio of one round says less than the median of several.
type Round struct {
	ConvergenceSeconds        float64 `json:"convergenceSeconds"`
	FloorSeconds              float64 `json:"floorSeconds"`
	ApplyFloorSeconds         float64 `json:"applyFloorSeconds"`
	ConvergenceOverFloor      float64 `json:"convergenceOverFloor"`
	ConvergenceOverApplyFloor float64 `json:"convergenceOverApplyFloor"`
	HostCPUOverFloorClient    float64 `json:"hostCpuOverFloorClient"`
	// The convergence / apply floor ratios of a host of no CPU and of a
	// host as cheap as the plain client (Regime.ServerBoundOverApplyFloor).
	ServerBoundOverApplyFloor      float64 `json:"serverBoundOverApplyFloor"`
	PlainClientBoundOverApplyFloor float64 `json:"plainClientBoundOverApplyFloor"`
	HostOwnOverhead                float64 `json:"hostOwnOverhead,omitempty"`
	WatchedFloorCPUOverFloorClient float64 `json:"watchedFloorCpuOverFloorClient,omitempty"`
	// ChangeObjectsPerSecond is the host-wide change's rate from the
	// cache sync; 0 when it was not measured.
	ChangeObjectsPerSecond float64 `json:"hostWideChangeObjectsPerSecond"`
}

// roundOf returns the round g measured.
func roundOf(g Regime) Round {
	r := Round{
		ConvergenceSeconds: g.Convergence.Seconds, FloorSeconds: g.Floor.Seconds, ApplyFloorSeconds: g.ApplyFloor.Seconds,
		ConvergenceOverFloor: g.ConvergenceOverFloor, ConvergenceOverApplyFloor: g.ConvergenceOverApplyFloor,
		HostCPUOverFloorClient:    g.HostCPUOverFloorClient,
		ServerBoundOverApplyFloor: g.ServerBoundOverApplyFloor, PlainClientBoundOverApplyFloor: g.PlainClientBoundOverApplyFloor,
		HostOwnOverhead: g.HostOwnOverhead, WatchedFloorCPUOverFloorClient: g.WatchedFloorCPUOverFloorClient,
	}
	if g.HostChange != nil {
		r.ChangeObjectsPerSecond = g.HostChange.ObjectsPerSecond
	}
	return r
}

// medianRound returns the median of each figure of rs, which is not empty;
// with an even number of rounds, the mean of the two middle ones.
func medianRound(rs []Round) Round {
	median := func(of func(Round) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = of(r)
		}
		slices.Sort(v)
		n := len(v)
		if n%2 == 1 {
			return v[n/2]
		}
		return (v[n/2-1] + v[n/2]) / 2
	}
	return Round{
		ConvergenceSeconds:             median(func(r Round) float64 { return r.ConvergenceSeconds }),
		FloorSeconds:                   median(func(r Round) float64 { return r.FloorSeconds }),
		ApplyFloorSeconds:              median(func(r Round) float64 { return r.ApplyFloorSeconds }),
		ConvergenceOverFloor:           median(func(r Round) float64 { return r.ConvergenceOverFloor }),
		ConvergenceOverApplyFloor:      median(func(r Round) float64 { return r.ConvergenceOverApplyFloor }),
		HostCPUOverFloorClient:         median(func(r Round) float64 { return r.HostCPUOverFloorClient }),
		ServerBoundOverApplyFloor:      median(func(r Round) float64 { return r.ServerBoundOverApplyFloor }),
		PlainClientBoundOverApplyFloor: median(func(r Round) float64 { return r.PlainClientBoundOverApplyFloor }),
		HostOwnOverhead:                median(func(r Round) float64 { return r.HostOwnOverhead }),
		WatchedFloorCPUOverFloorClient: median(func(r Round) float64 { return r.WatchedFloorCPUOverFloorClient }),
		ChangeObjectsPerSecond:         median(func(r Round) float64 { return r.ChangeObjectsPerSecond }),
	}
}

// CPUPerObject is CPU milliseconds per object in the convergence and in
// each floor.
type CPUPerObject struct {
	Convergence float64 `json:"convergence"`
	Floor       float64 `json:"floor"`
	ApplyFloor  float64 `json:"applyFloor"`
}

// regimeOf gathers a regime's figures from the result its run filled.
func regimeOf(name string, r *Result, controlPlane string) Regime {
	g := Regime{
		Name: name, QPS: r.QPS, Burst: r.Burst, ControlPlane: controlPlane, Objects: r.Objects,
		Incomplete: r.Incomplete, Convergence: r.Convergence, Floor: r.Floor, ProfilesAlone: r.ProfilesAlone, WatchedFloor: r.WatchedFloor,
		Requests: r.Requests, HostChange: r.HostChange,
		RequestsPerObject: r.Requests.TotalPerObject, MutatingPerObject: r.Requests.MutatingPerObject,
		Conflicts: countsTotal(r.Requests.Conflicts),
	}
	if r.ApplyFloor != nil {
		g.ApplyFloor = *r.ApplyFloor
	}
	if c := g.Convergence.ObjectsPerSecond; c > 0 {
		// Rates rather than times, so that a convergence stopped at its
		// limit compares too.
		g.ConvergenceOverFloor = g.Floor.ObjectsPerSecond / c
		g.ConvergenceOverApplyFloor = g.ApplyFloor.ObjectsPerSecond / c
	}
	objects := float64(r.Objects)
	if g.Incomplete != nil {
		objects = float64(g.Incomplete.ObjectsPresent)
	}
	if objects > 0 {
		ms := func(s float64) float64 { return 1000 * s / objects }
		all := float64(r.Objects)
		g.APIServerCPUPerObjectMs = CPUPerObject{
			Convergence: ms(g.Convergence.CPU.APIServer),
			Floor:       1000 * g.Floor.CPU.APIServer / all, ApplyFloor: 1000 * g.ApplyFloor.CPU.APIServer / all,
		}
		g.HostCPUPerObjectMs = CPUPerObject{
			Convergence: ms(g.Convergence.CPU.HostAndBench),
			Floor:       1000 * g.Floor.CPU.HostAndBench / all, ApplyFloor: 1000 * g.ApplyFloor.CPU.HostAndBench / all,
		}
		if g.HostCPUPerObjectMs.Floor > 0 {
			g.HostCPUOverFloorClient = g.HostCPUPerObjectMs.Convergence / g.HostCPUPerObjectMs.Floor
			if w := g.WatchedFloor; w != nil {
				g.WatchedFloorCPUOverFloorClient = w.CPU.HostAndBench / g.Floor.CPU.HostAndBench
			}
		}
		if plain := g.ApplyFloor.CPU; plain.APIServer+plain.Etcd+plain.HostAndBench > 0 {
			if in := r.ProfilesAlone; in != nil {
				plain.APIServer += in.CPU.APIServer
				plain.Etcd += in.CPU.Etcd
				plain.HostAndBench += in.CPU.HostAndBench
			}
			whole := 1000 * (plain.APIServer + plain.Etcd + plain.HostAndBench) / all
			server := ms(g.Convergence.CPU.APIServer + g.Convergence.CPU.Etcd)
			g.ServerBoundOverApplyFloor = server / whole
			g.PlainClientBoundOverApplyFloor = (server + 1000*plain.HostAndBench/all) / whole
			if g.PlainClientBoundOverApplyFloor > 0 && g.ConvergenceOverApplyFloor > 0 {
				g.HostOwnOverhead = g.ConvergenceOverApplyFloor / g.PlainClientBoundOverApplyFloor
			}
		}
	}
	status := 0
	for _, c := range r.Requests.Client {
		if c.Resource == "profiles/status" && mutatingVerbs[c.Verb] {
			status += c.N
		}
	}
	if r.Profiles > 0 {
		g.StatusWritesPerProfile = float64(status) / float64(r.Profiles)
	}
	if r.Objects > 0 {
		g.RequestsPerObjectBesideStatus = float64(r.Requests.ClientTotal-status) / float64(r.Objects)
		g.LeastRequestsPerObject = float64(r.Objects+r.Profiles) / float64(r.Objects)
	}
	return g
}

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

// changeRates sets every host-wide change's rate against the unthrottled
// POST floor of the same run and against its regime's QPS.
func (r *Result) changeRates() {
	var floor float64
	for _, g := range r.Regimes {
		if g.Name == RegimeUnthrottled {
			floor = g.Floor.ObjectsPerSecond
		}
	}
	for _, g := range r.Regimes {
		c := g.HostChange
		if c == nil {
			continue
		}
		if floor > 0 {
			c.OverUnthrottledFloor = c.ObjectsPerSecond / floor
		}
		if g.Name == RegimeLimited && g.QPS > 0 {
			c.OverQPS = c.ObjectsPerSecond / float64(g.QPS)
		}
	}
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
