package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Anchors from the design's performance bar, measured on the same kind of
// machine with 1,000 Profiles.
const (
	// anchorStatCan is the objects per second of StatCan's controllers,
	// bound by client-go's default 5 QPS.
	anchorStatCan = 5.0
	// anchorFloor is the objects per second of a plain client in the
	// design's own measurement (2,000 creates in 4.3 s).
	anchorFloor = 470.0
)

// Result is one run, as saved to bench/results.
type Result struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Config   string    `json:"config"`
	// Revision is the commit of the code that ran (see revision), so that
	// runs are compared against the code they measured; HostRevision that
	// of the host binary the host-process phase ran, which may differ.
	Revision     string `json:"revision,omitempty"`
	HostRevision string `json:"hostRevision,omitempty"`
	GoVersion    string `json:"goVersion"`
	// HostGOGC is the GOGC the in-process host ran with: the shipped
	// binary's, or the environment's ("" for runs before it was kept, all
	// at Go's default of 100).
	HostGOGC string   `json:"hostGOGC,omitempty"`
	CPUs     int      `json:"cpus"`
	Profiles int      `json:"profiles"`
	Plugins  []string `json:"plugins"`
	// QPS and Burst are the client rates of the first regime, which ran
	// every phase; Regime names it.
	QPS     float32 `json:"qps"`
	Burst   int     `json:"burst"`
	Regime  string  `json:"regime,omitempty"`
	Workers int     `json:"workers"`
	// FreshPhases is set when each floor and the convergence ran on an
	// empty control plane of its own; runs without it ran them one after
	// another on the same one.
	FreshPhases   bool           `json:"freshPhases,omitempty"`
	Objects       int            `json:"objects"`
	ObjectsByKind map[string]int `json:"objectsByKind"`

	// Incomplete is set when convergence was stopped at --converge-limit;
	// Convergence then holds the objects present per second so far, and
	// the later phases did not run.
	Incomplete  *Incomplete `json:"incomplete,omitempty"`
	Convergence Phase       `json:"convergence"`
	Floor       Phase       `json:"floor"`
	// ApplyFloor is the plain client sending the same objects as
	// server-side applies.
	ApplyFloor *Phase `json:"applyFloor,omitempty"`
	// ProfilesAlone is the benchmark creating the Profiles with no host
	// running, on the apply floor's control plane after its clock stopped:
	// the input every convergence starts from, which the floors do not
	// write. Only with fresh phases (the Profiles go with that control
	// plane).
	ProfilesAlone *Phase `json:"profilesAlone,omitempty"`
	// WatchedFloor is the POST floor's client with a cache of the host's
	// options watching what it writes (--watched-floor).
	WatchedFloor *Phase   `json:"watchedFloor,omitempty"`
	Ratios       Ratios   `json:"ratios"`
	Requests     Requests `json:"requests"`
	// Reconciles are the convergence's reconciles per Profile, per plugin
	// and per trigger; runs before they were kept have none.
	Reconciles *Reconciles `json:"reconciles,omitempty"`
	Steady     Steady      `json:"steadyState"`
	Drift      Drift       `json:"drift"`
	Memory     Memory      `json:"memory"`
	HostChange *HostChange `json:"hostWideChange,omitempty"`
	// Regimes are the convergence figures of every regime run, the first
	// one's (which the fields above hold too) first.
	Regimes []Regime `json:"regimes,omitempty"`
	// Latency is the time new Profiles took to be ready, in the first
	// regime.
	Latency *NewProfileLatency `json:"newProfileLatency,omitempty"`
	// HostProcess is the memory of the host running alone as
	// `profilekit run` in a child process; nil when it was not run.
	HostProcess *HostProcess `json:"hostProcess,omitempty"`
}

// HostProcess is the memory of the host alone, in its own process, with
// every Profile reconciled, before and after the unrelated objects.
type HostProcess struct {
	RSSMiB      float64 `json:"rssMiB"`
	RSSAfterMiB float64 `json:"rssAfterMiB"`
	RSSGrowth   float64 `json:"rssGrowth"`
	// The heap figures are the host's HeapInuse right after a garbage
	// collection it runs on request (its pprof endpoint), so garbage is not
	// counted.
	HeapInuseMiB      float64 `json:"heapInuseMiB"`
	HeapInuseAfterMiB float64 `json:"heapInuseAfterMiB"`
	// HeapPerObjectKiB is HeapInuseMiB over the owned objects: an upper
	// bound of the cost of one, since it spreads the host's fixed memory
	// (code, scheme, clients) over them too.
	HeapPerObjectKiB float64 `json:"heapPerObjectKiB"`
	// HeapAllocMiB is the live heap at the first reading (HeapAlloc: the
	// bytes of live objects, without the free space of the spans they are
	// in), and HeapAllocPerObjectKiB the same over the owned objects.
	HeapAllocMiB          float64 `json:"heapAllocMiB"`
	HeapAllocPerObjectKiB float64 `json:"heapAllocPerObjectKiB"`
}

// Incomplete is how far a convergence stopped at its limit got.
type Incomplete struct {
	ReadyProfiles  int `json:"readyProfiles"`
	ObjectsPresent int `json:"objectsPresent"`
}

// Phase is a timed creation of the desired objects.
type Phase struct {
	Seconds          float64 `json:"seconds"`
	ObjectsPerSecond float64 `json:"objectsPerSecond"`
	CPU              CPU     `json:"cpuSeconds"`
	// AllocatedKiBPerObject is CPU.AllocatedMiB over the objects written:
	// for the convergence, an upper bound of the host's allocation per
	// object, since the benchmark's client allocates in the same process.
	AllocatedKiBPerObject float64 `json:"allocatedKiBPerObject,omitempty"`
}

// newPhase is a phase that wrote objects in el with cpu.
func newPhase(el time.Duration, objects int, cpu CPU) Phase {
	p := Phase{Seconds: el.Seconds(), ObjectsPerSecond: float64(objects) / el.Seconds(), CPU: cpu}
	if objects > 0 {
		p.AllocatedKiBPerObject = cpu.AllocatedMiB * 1024 / float64(objects)
	}
	return p
}

// Ratios compare the convergence with the floor of the same run and with
// the design's anchors.
type Ratios struct {
	// ConvergenceOverFloor is convergence time / floor time (target <= 1.5),
	// computed as floor objects/s over convergence objects/s.
	ConvergenceOverFloor float64 `json:"convergenceOverFloor"`
	// SpeedupOverStatCan is objects/s over StatCan's ~5 objects/s (target >= 20).
	SpeedupOverStatCan float64 `json:"speedupOverStatCan"`
	// FloorOverAnchor is this run's floor over the design's 470 objects/s.
	FloorOverAnchor float64 `json:"floorOverAnchor"`
	// ConvergenceOverApplyFloor is convergence time / apply floor time
	// (target <= 1.15 unthrottled).
	ConvergenceOverApplyFloor float64 `json:"convergenceOverApplyFloor,omitempty"`
}

// Requests are the requests of the convergence.
type Requests struct {
	// Client are the host's requests, counted by its transport.
	Client []Count `json:"client"`
	// Server are the API server's apiserver_request_total on the resources
	// the host uses, less the benchmark's own requests.
	Server []Count `json:"server"`

	ClientTotal    int `json:"clientTotal"`
	ClientMutating int `json:"clientMutating"`
	ServerTotal    int `json:"serverTotal"`
	ServerMutating int `json:"serverMutating"`
	// Conflicts are the host's requests answered 409 Conflict, by verb
	// and resource: status writes that lost a race with another plugin's.
	Conflicts []Count `json:"conflicts"`
	// MutatingPerObject is client mutating requests per created object
	// (target <= 1.2); TotalPerObject counts reads too.
	MutatingPerObject float64 `json:"mutatingPerObject"`
	TotalPerObject    float64 `json:"totalPerObject"`
}

// Count is a number of requests of one verb on one resource.
type Count struct {
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	N        int    `json:"n"`
}

// Steady is a full pass over every Profile with nothing changed.
type Steady struct {
	// Seconds from the host's restart until every controller had
	// reconciled every Profile.
	Seconds    float64 `json:"seconds"`
	Reconciles int     `json:"reconciles"`
	// MutatingRequests are the host's POST, PUT, PATCH and DELETE requests
	// (client side); the target is 0.
	MutatingRequests int     `json:"mutatingRequests"`
	Requests         []Count `json:"requests"`
	// ServerMutatingHost are the API server's mutating requests on Profiles
	// and Events in the same window, less the benchmark's own.
	ServerMutatingHost int `json:"serverMutatingProfilesAndEvents"`
	// PeakHeapMiB is the highest heap in use of the process (host and
	// benchmark client) while the restarted host listed and reconciled.
	PeakHeapMiB float64 `json:"peakHeapMiB,omitempty"`
}

// HostChange is a restart with one host-wide input changed: the quota
// defaults' limits.memory, which every Profile's ResourceQuota carries.
type HostChange struct {
	// Seconds from the new host's start until every ResourceQuota carried
	// the new value.
	Seconds float64 `json:"seconds"`
	// CacheSyncSeconds from the new host's start until its caches synced
	// (every controller had begun to reconcile, which each does once its
	// watches synced), and SecondsFromSync from then until the last
	// ResourceQuota changed (seen through a watch).
	CacheSyncSeconds float64 `json:"cacheSyncSeconds"`
	SecondsFromSync  float64 `json:"secondsFromSync"`
	// ObjectsPerSecond is Changed over SecondsFromSync.
	ObjectsPerSecond float64 `json:"objectsPerSecond"`
	// SecondsFromFirst is from the first ResourceQuota seen changed to the
	// last, and ObjectsPerSecondFromFirst the rate between (Changed - 1
	// over it): the rollout itself, whatever the host did before its first
	// write and however its sync was told.
	SecondsFromFirst          float64 `json:"secondsFromFirst,omitempty"`
	ObjectsPerSecondFromFirst float64 `json:"objectsPerSecondFromFirst,omitempty"`
	// OverUnthrottledFloor is ObjectsPerSecond over the unthrottled
	// regime's POST floor (target >= 2/3); 0 when that regime did not run.
	OverUnthrottledFloor float64 `json:"overUnthrottledFloor,omitempty"`
	// OverQPS is ObjectsPerSecond over the configured QPS, in the limited
	// regime (target >= 1).
	OverQPS float64 `json:"overQps,omitempty"`
	// ProbedObjectsPerSecond is the rate of a second rollout, during which
	// the rollout latency probe created its Profiles (their requests go
	// first); 0 when no probe ran. Runs without this field measured the
	// rate above with the probe running and had no second rollout.
	ProbedObjectsPerSecond float64 `json:"probedObjectsPerSecond,omitempty"`
	Changed                int     `json:"changed"`
	// MutatingRequests are the new host's POST, PUT, PATCH and DELETE
	// requests until it was idle; the target is one per changed object.
	MutatingRequests int     `json:"mutatingRequests"`
	Requests         []Count `json:"requests"`
}

// Drift is the repair of objects changed by hand.
type Drift struct {
	Changed  int       `json:"changed"`
	Repaired int       `json:"repaired"`
	All      Quantiles `json:"all"`
	Deleted  Quantiles `json:"deleted"`
	Edited   Quantiles `json:"edited"`
}

// Memory is the process's memory with the host converged, before and after
// unrelated objects were added.
type Memory struct {
	HeapInuseMiB      float64 `json:"heapInuseMiB"`
	RSSMiB            float64 `json:"rssMiB"`
	HeapInuseAfterMiB float64 `json:"heapInuseAfterMiB"`
	RSSAfterMiB       float64 `json:"rssAfterMiB"`
	// HeapGrowth is heap after / heap before.
	HeapGrowth float64 `json:"heapGrowth"`
	Unrelated  int     `json:"unrelatedObjects"`
	// HostRequestsForUnrelated counts the host's requests on Secrets and
	// ConfigMaps while they were added: 0 means no informer for them.
	HostRequestsForUnrelated int `json:"hostRequestsForUnrelated"`
	// InProcess says the figures are of the benchmark process, which runs
	// the host and the benchmark's own client.
	InProcess bool `json:"inProcess"`
}

func sortedCounts(c counts) []Count {
	out := make([]Count, 0, len(c))
	for k, n := range c {
		out = append(out, Count{Verb: k.Verb, Resource: k.Resource, N: n})
	}
	slices.SortFunc(out, func(a, b Count) int {
		return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Verb, b.Verb))
	})
	return out
}

func requestReport(client, server, conflicts counts, objects int) Requests {
	r := Requests{
		Client: sortedCounts(client), Server: sortedCounts(server), Conflicts: sortedCounts(conflicts),
		ClientTotal: client.total(), ClientMutating: client.mutating(),
		ServerTotal: server.total(), ServerMutating: server.mutating(),
	}
	if objects > 0 {
		r.MutatingPerObject = float64(r.ClientMutating) / float64(objects)
		r.TotalPerObject = float64(r.ClientTotal) / float64(objects)
	}
	return r
}

func (r *Result) anchors() {
	// Rates rather than times, so that a convergence stopped at its limit
	// compares too; for a complete one it is the ratio of the times.
	if r.Convergence.ObjectsPerSecond > 0 {
		r.Ratios.ConvergenceOverFloor = r.Floor.ObjectsPerSecond / r.Convergence.ObjectsPerSecond
	}
	r.Ratios.SpeedupOverStatCan = r.Convergence.ObjectsPerSecond / anchorStatCan
	r.Ratios.FloorOverAnchor = r.Floor.ObjectsPerSecond / anchorFloor
	if r.ApplyFloor != nil && r.Convergence.ObjectsPerSecond > 0 {
		r.Ratios.ConvergenceOverApplyFloor = r.ApplyFloor.ObjectsPerSecond / r.Convergence.ObjectsPerSecond
	}
	r.changeRates()
}

// Save writes the result as JSON to dir, named by its start time and N, and
// returns the path.
func (r *Result) Save(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("results folder: %w", err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-n%d.json", r.Started.Format("2006-01-02T1504Z"), r.Profiles))
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode result: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("write result: %w", err)
	}
	return path, nil
}
