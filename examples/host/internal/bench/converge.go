package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// createProfiles creates the Profiles through the benchmark's driver, as
// many at once as driverWorkers.
func (b *bench) createProfiles(ctx context.Context, profiles []*kubeflowv1.Profile) error {
	return parallel(ctx, len(profiles), driverWorkers, func(ctx context.Context, i int) error {
		if err := b.driver.Create(ctx, profiles[i].DeepCopy()); err != nil {
			return fmt.Errorf("create Profile %s: %w", profiles[i].Name, err)
		}
		return nil
	})
}

// converge creates the Profiles and waits until every plugin's condition is
// True on every one and every desired object exists. It counts the requests
// the host sent (client side) and the API server served (its /metrics).
func (b *bench) converge(ctx context.Context, h *host, profiles []*kubeflowv1.Profile, d *desired) error {
	fmt.Fprintf(b.Out, "\n== convergence: %d Profiles, %d plugins, %d objects\n", len(profiles), len(b.defs), len(d.objects))
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = p.Name
	}
	if _, core := b.Config.Section(plugins.CoreKind); core {
		fmt.Fprintf(b.Out, "the core plugin makes the %d namespaces, on the clock\n", len(names))
	} else {
		t := time.Now()
		if err := b.createNamespaces(ctx, names); err != nil {
			return err
		}
		fmt.Fprintf(b.Out, "created %d namespaces (not timed) in %s\n", len(names), time.Since(t).Round(time.Millisecond))
	}

	if err := b.warmUp(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	w, err := b.watchReady(ctx, d.conditions)
	if err != nil {
		return err
	}
	srvBefore, err := serverCounts(ctx, b.cs)
	if err != nil {
		return err
	}
	hostBefore, drvBefore, confBefore := h.counter.snapshot(), b.drv.snapshot(), h.counter.conflictCount()
	wakesBefore, err := readWakes()
	if err != nil {
		return err
	}
	cpu, err := sampleCPU()
	if err != nil {
		return err
	}
	if b.CPUProfile != "" {
		stop, err := startProfile(b.CPUProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	profiled := b.apiServerProfile(ctx, "convergence")
	start := time.Now()
	if err := b.createProfiles(ctx, profiles); err != nil {
		return err
	}
	created := time.Since(start)
	var bulk func() (*Latency, error)
	if b.res.Latency != nil {
		bulk = b.bulkProbe(ctx, time.Now())
	}
	fmt.Fprintf(b.Out, "created %d Profiles in %s\n", len(profiles), created.Round(time.Millisecond))
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	var bound <-chan time.Time
	if b.ConvergeLimit > 0 {
		// The limit counts from the clock's start, Profile creation included.
		bound = time.After(b.ConvergeLimit - time.Since(start))
	}
wait:
	for {
		select {
		case <-w.done:
			break wait
		case <-bound:
			return b.incomplete(ctx, h, d, w, start, cpu, hostBefore, confBefore)
		case <-ctx.Done():
			n, _ := w.progress()
			return fmt.Errorf("convergence: %d of %d Profiles ready after %s: %w", n, len(profiles), time.Since(start).Round(time.Second), ctx.Err())
		case <-tick.C:
			n, _ := w.progress()
			fmt.Fprintf(b.Out, "  %s: %d/%d Profiles ready; reconciles %s\n", time.Since(start).Round(time.Second), n, len(profiles), b.progress())
		}
	}
	_, readyAt := w.progress()
	end := readyAt
	// The CPU figures stop with the clock: the list that checks every
	// desired object exists is the benchmark's work, not the host's, and
	// is read again only when objects are missing, with the clock running.
	convCPU := cpuSince(cpu)
	missing, err := b.missing(ctx, d)
	for err == nil && missing > 0 {
		fmt.Fprintf(b.Out, "  every condition True, %d desired objects still missing\n", missing)
		select {
		case <-ctx.Done():
			return fmt.Errorf("convergence: %d objects missing: %w", missing, ctx.Err())
		case <-time.After(time.Second):
		}
		missing, err = b.missing(ctx, d)
		end, convCPU = time.Now(), cpuSince(cpu)
	}
	if err != nil {
		return err
	}
	el := end.Sub(start)
	b.res.Convergence = newPhase(el, len(d.objects), convCPU)
	alloc := fmt.Sprintf("%.1f KiB allocated per object by host+bench", b.res.Convergence.AllocatedKiBPerObject)
	if f := b.res.ApplyFloor; f != nil {
		alloc += fmt.Sprintf(", %.1f by the apply floor's client", f.AllocatedKiBPerObject)
	}
	fmt.Fprintf(b.Out, "converged in %s: every condition True and all %d objects present (%.0f objects/s; %s)\n  %s\n  %s\n",
		el.Round(time.Millisecond), len(d.objects), b.res.Convergence.ObjectsPerSecond, alloc, b.res.Convergence.CPU, w.tail(start))
	if err := profiled(); err != nil {
		return err
	}

	if bulk != nil {
		l, err := bulk()
		if err != nil {
			return fmt.Errorf("bulk latency probe: %w", err)
		}
		b.res.Latency.Bulk = l
		b.printLatency("new Profiles during the bulk convergence", l)
	}
	// Events are sent after the conditions; let the host finish what the
	// pass started before counting.
	if err := waitIdle(ctx, b.Timeout); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	srvAfter, err := serverCounts(ctx, b.cs)
	if err != nil {
		return err
	}
	hostReq := h.counter.snapshot().minus(hostBefore)
	drvReq := b.drv.snapshot().minus(drvBefore)
	keep := b.hostResources(d.kinds())
	srvReq := srvAfter.minus(srvBefore).only(keep).minus(drvReq)
	b.res.Requests = requestReport(hostReq, srvReq, h.counter.conflictCount().minus(confBefore), len(d.objects))
	wakesAfter, err := readWakes()
	if err != nil {
		return err
	}
	served := len(profiles)
	if bulk != nil {
		served += bulkProbes
	}
	b.res.Reconciles = reconcilesOf(wakesAfter.since(wakesBefore), served, len(b.defs))
	b.res.Reconciles.write(b.Out)
	return nil
}

// readyWatch follows every Profile's conditions through one watch.
type readyWatch struct {
	mu    sync.Mutex
	want  map[string][]string
	ready map[string]bool
	// since is when each ready Profile became ready.
	since   map[string]time.Time
	readyAt time.Time
	done    chan struct{}
}

func (w *readyWatch) progress() (int, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ready), w.readyAt
}

func (w *readyWatch) observe(p *kubeflowv1.Profile) {
	want, ok := w.want[p.Name]
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if ready(p, want) {
		if !w.ready[p.Name] {
			w.since[p.Name] = time.Now()
		}
		w.ready[p.Name] = true
	} else {
		delete(w.ready, p.Name)
	}
	if len(w.ready) == len(w.want) && w.readyAt.IsZero() {
		w.readyAt = time.Now()
		close(w.done)
	}
}

// tail says when the Profiles became ready, from start: the times by which
// half, nine in ten and 99 in 100 were, and the last few, so that a
// convergence held back by a few Profiles shows.
func (w *readyWatch) tail(start time.Time) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	type at struct {
		name string
		d    time.Duration
	}
	all := make([]at, 0, len(w.since))
	for name, t := range w.since {
		all = append(all, at{name, t.Sub(start)})
	}
	if len(all) == 0 {
		return "no Profile ready"
	}
	slices.SortFunc(all, func(a, b at) int { return cmp.Compare(a.d, b.d) })
	q := func(f float64) time.Duration {
		return all[min(len(all)-1, int(f*float64(len(all))))].d.Round(10 * time.Millisecond)
	}
	var last []string
	for _, a := range all[max(0, len(all)-3):] {
		last = append(last, fmt.Sprintf("%s %s", a.name, a.d.Round(10*time.Millisecond)))
	}
	return fmt.Sprintf("ready by %s (half), %s (90%%), %s (99%%); last %s", q(0.5), q(0.9), q(0.99), strings.Join(last, ", "))
}

// warmUp makes the host serve one Profile of its own (a probe's, which the
// request counts leave out) before the clock starts, and waits until the
// host is idle: the host's caches have synced when it is started, but its
// controllers start after them, each first listing the kinds it alone
// watches. A clock started before would time that start-up as
// convergence, with the machine partly idle while Profiles already wait,
// as runs before 2026-11-29 did (the small configuration's convergence,
// 86-87% busy, is 99% busy with the host warmed up, and 10-15% shorter).
func (b *bench) warmUp(ctx context.Context) error {
	if _, ok, err := b.probeOne(ctx, Profile(probePrefix+"warmup", 1)); err != nil || !ok {
		return errors.Join(errors.New("warm-up: the host did not serve a first Profile"), err)
	}
	return waitIdle(ctx, b.Timeout)
}

// warmUpProfiles counts warmUp's Profile, which stays for the later phases
// (bench.extraProfiles).
const warmUpProfiles = 1

// watchReady starts following the Profiles. It lists them once, then
// watches from that list's version, listing again if the watch ends early.
func (b *bench) watchReady(ctx context.Context, want map[string][]string) (*readyWatch, error) {
	w := &readyWatch{want: want, ready: map[string]bool{}, since: map[string]time.Time{}, done: make(chan struct{})}
	list := func() (string, error) {
		var l kubeflowv1.ProfileList
		if err := b.driver.List(ctx, &l); err != nil {
			return "", fmt.Errorf("list Profiles: %w", err)
		}
		for i := range l.Items {
			w.observe(&l.Items[i])
		}
		return l.ResourceVersion, nil
	}
	rv, err := list()
	if err != nil {
		return nil, err
	}
	go func() {
		for ctx.Err() == nil {
			wi, err := b.driver.Watch(ctx, &kubeflowv1.ProfileList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			if err == nil {
				for ev := range wi.ResultChan() {
					if p, ok := ev.Object.(*kubeflowv1.Profile); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
						w.observe(p)
					}
				}
				wi.Stop()
			}
			select {
			case <-w.done:
				return
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			if rv, err = list(); err != nil {
				rv = ""
			}
		}
	}()
	return w, nil
}

// missing counts the desired objects that the API server does not have,
// listing each kind once by profilekit's label, as metadata only.
func (b *bench) missing(ctx context.Context, d *desired) (int, error) {
	have := map[objectKey]bool{}
	for _, gvk := range d.kinds() {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := b.driver.List(ctx, l, managedSelector()); err != nil {
			return 0, fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		for i := range l.Items {
			have[objectKey{GVK: gvk, Namespace: l.Items[i].Namespace, Name: l.Items[i].Name}] = true
		}
	}
	n := 0
	for _, o := range d.objects {
		if !have[keyOf(o.Object)] {
			n++
		}
	}
	return n, nil
}

// progress summarises each controller's reconciles so far, which shows the
// plugin that holds convergence back.
func (b *bench) progress() string {
	c, err := controllerCounters()
	if err != nil {
		return err.Error()
	}
	parts := make([]string, 0, len(c))
	for _, k := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%s %d", strings.TrimPrefix(k, "profilekit-"), c[k]))
	}
	return strings.Join(parts, ", ")
}

// startProfile starts a CPU profile into path and returns what stops it.
func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}, nil
}

// errIncomplete says that convergence did not finish within --converge-limit.
var errIncomplete = errors.New("convergence did not finish within the limit")

// incomplete records how far convergence got when the limit struck: the
// Profiles ready, the desired objects present, and the requests so far.
func (b *bench) incomplete(ctx context.Context, h *host, d *desired, w *readyWatch, start time.Time, cpu cpuSample, hostBefore, confBefore counts) error {
	el := time.Since(start)
	n, _ := w.progress()
	cpuUsed := cpuSince(cpu)
	missing, err := b.missing(ctx, d)
	if err != nil {
		return err
	}
	present := len(d.objects) - missing
	b.res.Convergence = newPhase(el, present, cpuUsed)
	b.res.Incomplete = &Incomplete{ReadyProfiles: n, ObjectsPresent: present}
	hostReq := h.counter.snapshot().minus(hostBefore)
	b.res.Requests = requestReport(hostReq, counts{}, h.counter.conflictCount().minus(confBefore), present)
	fmt.Fprintf(b.Out, "stopped at the limit, %s: %d of %d Profiles ready, %d of %d objects present (%.0f objects/s)\n  %s\n",
		el.Round(time.Millisecond), n, len(d.conditions), present, len(d.objects), b.res.Convergence.ObjectsPerSecond, cpuUsed)
	return errIncomplete
}
