package bench

import (
	"slices"
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
