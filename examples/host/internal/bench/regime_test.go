package bench

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/profilekit/profilekit/examples/host/internal/render"
	"github.com/profilekit/profilekit/plugins"
)

func TestRegimeOf(t *testing.T) {
	cases := []struct {
		reason string
		res    *Result
		want   Regime
	}{
		{
			reason: "the ratios are the floors' rates over the convergence's, CPU is per object, status writes are per Profile, other requests per object",
			res: &Result{
				QPS: 200, Burst: 400, Profiles: 10, Objects: 100,
				Convergence: Phase{Seconds: 4, ObjectsPerSecond: 25, CPU: CPU{APIServer: 0.4, Etcd: 0.05, HostAndBench: 0.2}},
				Floor:       Phase{Seconds: 2, ObjectsPerSecond: 50, CPU: CPU{APIServer: 0.2, HostAndBench: 0.05}},
				ApplyFloor:  &Phase{Seconds: 3, ObjectsPerSecond: 100.0 / 3, CPU: CPU{APIServer: 0.3, Etcd: 0.1, HostAndBench: 0.1}},
				Requests: Requests{
					Client: []Count{
						{Verb: "APPLY", Resource: "resourcequotas", N: 100},
						{Verb: "PUT", Resource: "profiles/status", N: 15},
						{Verb: "GET", Resource: "profiles", N: 3},
					},
					ClientTotal:       118,
					Conflicts:         []Count{{Verb: "PUT", Resource: "profiles/status", N: 2}},
					TotalPerObject:    1.15,
					MutatingPerObject: 1.12,
				},
			},
			want: Regime{
				Name: RegimeLimited, QPS: 200, Burst: 400, ControlPlane: "first", Objects: 100,
				ConvergenceOverFloor: 2, ConvergenceOverApplyFloor: 4.0 / 3,
				APIServerCPUPerObjectMs: CPUPerObject{Convergence: 4, Floor: 2, ApplyFloor: 3},
				HostCPUPerObjectMs:      CPUPerObject{Convergence: 2, Floor: 0.5, ApplyFloor: 1},
				HostCPUOverFloorClient:  4,
				// (4.0 + 0.5) ms of server per object over (3 + 1 + 1) ms
				// of the apply floor's; with its client's 1 ms added.
				ServerBoundOverApplyFloor: 0.9, PlainClientBoundOverApplyFloor: 1.1,
				HostOwnOverhead:   (4.0 / 3) / 1.1,
				RequestsPerObject: 1.15, MutatingPerObject: 1.12,
				RequestsPerObjectBesideStatus: 1.03,
				LeastRequestsPerObject:        1.1,
				StatusWritesPerProfile:        1.5,
				Conflicts:                     2,
			},
		},
		{
			reason: "the watched floor's client CPU is compared with the POST floor client's",
			res: &Result{
				Profiles: 10, Objects: 100,
				Convergence:  Phase{ObjectsPerSecond: 10, CPU: CPU{HostAndBench: 0.3}},
				Floor:        Phase{ObjectsPerSecond: 40, CPU: CPU{HostAndBench: 0.1}},
				WatchedFloor: &Phase{ObjectsPerSecond: 30, CPU: CPU{HostAndBench: 0.14}},
			},
			want: Regime{
				Name: RegimeLimited, ControlPlane: "first", Objects: 100,
				WatchedFloor:                   &Phase{ObjectsPerSecond: 30, CPU: CPU{HostAndBench: 0.14}},
				WatchedFloorCPUOverFloorClient: 1.4,
				ConvergenceOverFloor:           4,
				HostCPUPerObjectMs:             CPUPerObject{Convergence: 3, Floor: 1},
				HostCPUOverFloorClient:         3,
				LeastRequestsPerObject:         1.1,
			},
		},
		{
			reason: "a convergence stopped at its limit counts its CPU over the objects present",
			res: &Result{
				Profiles: 10, Objects: 100, Incomplete: &Incomplete{ReadyProfiles: 5, ObjectsPresent: 50},
				Convergence: Phase{ObjectsPerSecond: 10, CPU: CPU{APIServer: 0.1}},
				Floor:       Phase{ObjectsPerSecond: 40, CPU: CPU{APIServer: 0.1}},
			},
			want: Regime{
				Name: RegimeLimited, ControlPlane: "first", Objects: 100,
				Incomplete:              &Incomplete{ReadyProfiles: 5, ObjectsPresent: 50},
				ConvergenceOverFloor:    4,
				APIServerCPUPerObjectMs: CPUPerObject{Convergence: 2, Floor: 1},
				LeastRequestsPerObject:  1.1,
			},
		},
		{
			reason: "the Profiles' creation alone, when measured, counts as the plain client's work beside the apply floor",
			res: &Result{
				Profiles: 10, Objects: 100,
				Convergence:   Phase{ObjectsPerSecond: 10, CPU: CPU{APIServer: 0.5, Etcd: 0.1, HostAndBench: 0.2}},
				Floor:         Phase{ObjectsPerSecond: 40},
				ApplyFloor:    &Phase{ObjectsPerSecond: 20, CPU: CPU{APIServer: 0.3, Etcd: 0.1, HostAndBench: 0.05}},
				ProfilesAlone: &Phase{CPU: CPU{APIServer: 0.1, Etcd: 0.02, HostAndBench: 0.03}},
			},
			want: Regime{
				Name: RegimeLimited, ControlPlane: "first", Objects: 100,
				ProfilesAlone:             &Phase{CPU: CPU{APIServer: 0.1, Etcd: 0.02, HostAndBench: 0.03}},
				ConvergenceOverFloor:      4,
				ConvergenceOverApplyFloor: 2,
				APIServerCPUPerObjectMs:   CPUPerObject{Convergence: 5, ApplyFloor: 3},
				HostCPUPerObjectMs:        CPUPerObject{Convergence: 2, ApplyFloor: 0.5},
				// 6 ms of server per object over (4 + 1.2 + 0.8) ms of the
				// plain client's work; then its client's 0.8 ms added.
				ServerBoundOverApplyFloor: 1, PlainClientBoundOverApplyFloor: 6.8 / 6,
				HostOwnOverhead:        2 / (6.8 / 6),
				LeastRequestsPerObject: 1.1,
			},
		},
		{
			reason: "the bounds count the convergence's server CPU over the objects present and the apply floor's over all of them",
			res: &Result{
				Profiles: 10, Objects: 100, Incomplete: &Incomplete{ReadyProfiles: 5, ObjectsPresent: 50},
				Convergence: Phase{ObjectsPerSecond: 10, CPU: CPU{APIServer: 0.2, Etcd: 0.05, HostAndBench: 0.5}},
				Floor:       Phase{ObjectsPerSecond: 40},
				ApplyFloor:  &Phase{ObjectsPerSecond: 20, CPU: CPU{APIServer: 0.3, Etcd: 0.1, HostAndBench: 0.1}},
			},
			want: Regime{
				Name: RegimeLimited, ControlPlane: "first", Objects: 100,
				Incomplete:                &Incomplete{ReadyProfiles: 5, ObjectsPresent: 50},
				ConvergenceOverFloor:      4,
				ConvergenceOverApplyFloor: 2,
				APIServerCPUPerObjectMs:   CPUPerObject{Convergence: 4, ApplyFloor: 3},
				HostCPUPerObjectMs:        CPUPerObject{Convergence: 10, ApplyFloor: 1},
				// 5 ms of server per object present over 5 ms per object
				// of the apply floor's, then its client's 1 ms added.
				ServerBoundOverApplyFloor: 1, PlainClientBoundOverApplyFloor: 1.2,
				HostOwnOverhead:        2 / 1.2,
				LeastRequestsPerObject: 1.1,
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			got := regimeOf(RegimeLimited, tc.res, "first")
			opts := []cmp.Option{
				cmpopts.EquateApprox(0, 1e-9),
				cmpopts.IgnoreFields(Regime{}, "Convergence", "Floor", "ApplyFloor", "Requests"),
			}
			if diff := cmp.Diff(tc.want, got, opts...); diff != "" {
				t.Errorf("%s\nregimeOf(...): -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestChangeRates(t *testing.T) {
	limited := &HostChange{ObjectsPerSecond: 300}
	unthrottled := &HostChange{ObjectsPerSecond: 600}
	r := &Result{Regimes: []Regime{
		{Name: RegimeLimited, QPS: 200, HostChange: limited},
		{Name: RegimeUnthrottled, QPS: unthrottledRate, Floor: Phase{ObjectsPerSecond: 900}, HostChange: unthrottled},
	}}
	r.changeRates()
	want := []*HostChange{
		{ObjectsPerSecond: 300, OverUnthrottledFloor: 300.0 / 900, OverQPS: 1.5},
		{ObjectsPerSecond: 600, OverUnthrottledFloor: 600.0 / 900},
	}
	if diff := cmp.Diff(want, []*HostChange{limited, unthrottled}, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("changeRates: -want +got:\n%s", diff)
	}
}

func TestFloorCopies(t *testing.T) {
	obj := func(kind, ns, name string) render.Object {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind(kind)
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetLabels(map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelProfile: "bench-00001"})
		return render.Object{Profile: "bench-00001", Object: u}
	}
	d := &desired{objects: []render.Object{obj("Namespace", "", "bench-00001"), obj("ResourceQuota", "bench-00001", "quota")}}
	namespaces, objs, nss := floorCopies(d, "applyfloor")
	got := []string{}
	for _, u := range append(namespaces, objs...) {
		got = append(got, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName()+" "+u.GetLabels()[plugins.LabelManagedBy]+" "+u.GetLabels()[plugins.LabelProfile])
	}
	want := []string{
		"Namespace /applyfloor-00001 profilekit-bench-floor applyfloor-00001",
		"ResourceQuota applyfloor-00001/quota profilekit-bench-floor applyfloor-00001",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("floorCopies: -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"applyfloor-00001"}, nss); diff != "" {
		t.Errorf("floorCopies namespaces: -want +got:\n%s", diff)
	}
	if d.objects[1].Object.GetNamespace() != "bench-00001" {
		t.Errorf("floorCopies changed the desired object: namespace %q", d.objects[1].Object.GetNamespace())
	}
}

func TestIsProbePath(t *testing.T) {
	cases := []struct {
		reason string
		path   string
		want   bool
	}{
		{"a probe's status write", "/apis/kubeflow.org/v1/profiles/probe-idle-00001/status", true},
		{"an object in a probe's namespace", "/api/v1/namespaces/probe-bulk-00002/resourcequotas/quota", true},
		{"a probe's namespace, applied", "/api/v1/namespaces/probe-rollout-00003", true},
		{"a benchmark Profile's status write", "/apis/kubeflow.org/v1/profiles/bench-00001/status", false},
		{"a list of every Profile", "/apis/kubeflow.org/v1/profiles", false},
	}
	for _, tc := range cases {
		if got := isProbePath(tc.path); got != tc.want {
			t.Errorf("%s: isProbePath(%q) = %v, want %v", tc.reason, tc.path, got, tc.want)
		}
	}
}

func TestMedianRound(t *testing.T) {
	round := func(conv, overApply, cpu float64) Round {
		return Round{ConvergenceSeconds: conv, ConvergenceOverApplyFloor: overApply, HostCPUOverFloorClient: cpu}
	}
	cases := []struct {
		reason string
		rounds []Round
		want   Round
	}{
		{"one round is its own median", []Round{round(60, 1.2, 2.1)}, round(60, 1.2, 2.1)},
		{"the bounds take their medians too",
			[]Round{{ServerBoundOverApplyFloor: 1.2, PlainClientBoundOverApplyFloor: 1.3, HostOwnOverhead: 1.25}, {ServerBoundOverApplyFloor: 1.0, PlainClientBoundOverApplyFloor: 1.1, HostOwnOverhead: 1.4},
				{ServerBoundOverApplyFloor: 1.1, PlainClientBoundOverApplyFloor: 1.4, HostOwnOverhead: 1.1}},
			Round{ServerBoundOverApplyFloor: 1.1, PlainClientBoundOverApplyFloor: 1.3, HostOwnOverhead: 1.25}},
		{"each figure's median is taken on its own, whatever round it comes from",
			[]Round{round(90, 0.9, 2.7), round(60, 1.5, 2.0), round(70, 1.2, 2.2)}, round(70, 1.2, 2.2)},
		{"an even number of rounds gives the mean of the middle two",
			[]Round{round(50, 1.0, 2.0), round(80, 1.6, 3.0), round(60, 1.2, 2.4), round(70, 1.4, 2.6)}, round(65, 1.3, 2.5)},
	}
	for _, c := range cases {
		got := medianRound(c.rounds)
		if diff := cmp.Diff(c.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
			t.Errorf("%s: median (-want +got):\n%s", c.reason, diff)
		}
	}
}

func TestRoundOfTakesTheRegimesFigures(t *testing.T) {
	g := regimeOf(RegimeUnthrottled, &Result{
		Profiles: 10, Objects: 100,
		Convergence: Phase{Seconds: 4, ObjectsPerSecond: 25, CPU: CPU{HostAndBench: 0.2}},
		Floor:       Phase{Seconds: 2, ObjectsPerSecond: 50, CPU: CPU{HostAndBench: 0.05}},
		ApplyFloor:  &Phase{Seconds: 3, ObjectsPerSecond: 100.0 / 3, CPU: CPU{APIServer: 0.4, HostAndBench: 0.1}},
		HostChange:  &HostChange{ObjectsPerSecond: 400},
	}, "fresh")
	want := Round{ConvergenceSeconds: 4, FloorSeconds: 2, ApplyFloorSeconds: 3,
		ConvergenceOverFloor: 2, ConvergenceOverApplyFloor: 4.0 / 3, HostCPUOverFloorClient: 4, ChangeObjectsPerSecond: 400,
		ServerBoundOverApplyFloor: 0, PlainClientBoundOverApplyFloor: 0.2, HostOwnOverhead: (4.0 / 3) / 0.2}
	if diff := cmp.Diff(want, roundOf(g), cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("roundOf (-want +got):\n%s", diff)
	}
}

func TestBoundNote(t *testing.T) {
	cases := []struct {
		reason        string
		server, plain float64
		want          string
	}{
		{"no apply floor measured says nothing", 0, 0, ""},
		{"a server bound above the target puts it out of any host's reach", 1.18, 1.3, "above 1.15x: out of any host's reach"},
		{"a plain client's bound above it asks for a host cheaper than a plain client", 1.1, 1.2, "above 1.15x: needs a host cheaper than a plain client"},
		{"both within it leave the target to the host", 1.0, 1.1, ""},
	}
	for _, c := range cases {
		if got := boundNote(c.server, c.plain); got != c.want {
			t.Errorf("%s: boundNote(%v, %v) = %q, want %q", c.reason, c.server, c.plain, got, c.want)
		}
	}
}
