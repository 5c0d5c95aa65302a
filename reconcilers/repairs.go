package reconcilers

// This file holds how the Reconciler stops putting back, in a loop, an
// object another controller keeps changing: a few repairs in a row, then a
// back-off that doubles while the other controller goes on, and a fresh
// start once a repair holds.

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/profilekit/profilekit/plugins/apply"
)

const (
	// RepairsBeforeBackoff is how many times in a row the host puts back
	// an object that someone else changes again within RepairWindow of
	// each repair, before it leaves the object alone for RepairBackoff.
	RepairsBeforeBackoff = 3
	// RepairWindow is how soon after a repair a change counts as undoing
	// it. A repair that holds for longer ends the episode: the next change
	// is put back at once, as the first.
	RepairWindow = time.Minute
	// RepairBackoff is how long the host first leaves an object alone;
	// after it the object is put back once, and a change within
	// RepairWindow doubles the back-off, up to MaxRepairBackoff.
	RepairBackoff = 30 * time.Second
	// MaxRepairBackoff bounds the back-off: beside a controller that never
	// stops, the host writes the object about twice an hour.
	MaxRepairBackoff = 30 * time.Minute
)

var (
	repairHoldsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "profilekit_repair_holds_total",
		Help: "Times the host stopped putting back an object that another writer changed again after each of its last repairs, and left it alone for a back-off: another controller writes the object too.",
	}, []string{"plugin"})
	contestedObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "profilekit_contested_objects",
		Help: "Objects the host leaves, for now, as another writer changed them, because that writer changed them again after each repair: while above 0, two controllers write the same objects.",
	}, []string{"plugin"})
)

func init() {
	metrics.Registry.MustRegister(repairHoldsTotal, contestedObjects)
}

// repairs is a Reconciler's apply.RepairGate. What it knows of each
// object lives in memory: a host that restarts counts afresh, which costs
// at most RepairsBeforeBackoff writes of each contested object per start.
type repairs struct {
	kind string
	now  func() time.Time

	mu      sync.Mutex
	objects map[repairKey]*repairEpisode
}

type repairKey struct {
	gvk  schema.GroupVersionKind
	name types.NamespacedName
}

// repairEpisode is one object's repairs since the last one that held.
type repairEpisode struct {
	// repairs is how many times it was put back in a row; last the last.
	repairs int
	last    time.Time
	// holds is how many back-offs the episode has had; heldFor the last
	// one's length and heldUntil its end. probed is set once the object
	// was put back after the last back-off.
	holds     int
	heldFor   time.Duration
	heldUntil time.Time
	probed    bool
}

func newRepairs(kind string) *repairs {
	return &repairs{kind: kind, now: time.Now, objects: map[repairKey]*repairEpisode{}}
}

// Repair lets an object be put back RepairsBeforeBackoff times in a row,
// then holds it back for a back-off, then lets it be put back once, and
// holds it back for twice as long when that repair is undone within
// RepairWindow too.
func (r *repairs) Repair(obj client.Object) (apply.RepairHold, bool) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.sweep(now)
	k := repairKey{gvk: obj.GetObjectKind().GroupVersionKind(), name: client.ObjectKeyFromObject(obj)}
	e := r.objects[k]
	if e == nil {
		e = &repairEpisode{}
		r.objects[k] = e
	}
	switch {
	case now.Before(e.heldUntil):
		return e.hold(now), false
	case e.holds > 0 && !e.probed:
		// The back-off passed: put it back once more, and see.
		e.probed, e.last = true, now
		e.repairs++
		return apply.RepairHold{}, true
	case e.repairs > 0 && now.Sub(e.last) > RepairWindow:
		// The last repair held: a new episode.
		*e = repairEpisode{}
	}
	if e.probed || e.repairs >= RepairsBeforeBackoff {
		e.holds++
		e.heldFor = min(RepairBackoff<<min(e.holds-1, 16), MaxRepairBackoff)
		e.heldUntil, e.probed = now.Add(e.heldFor), false
		repairHoldsTotal.WithLabelValues(r.kind).Inc()
		return e.hold(now), false
	}
	e.repairs++
	e.last = now
	return apply.RepairHold{}, true
}

func (e *repairEpisode) hold(now time.Time) apply.RepairHold {
	return apply.RepairHold{Repairs: e.repairs, For: e.heldFor, Left: e.heldUntil.Sub(now)}
}

// sweep forgets the episodes that ended (no back-off running, no repair
// within RepairWindow) and sets the gauge of the objects held back.
func (r *repairs) sweep(now time.Time) {
	held := 0
	for k, e := range r.objects {
		switch {
		case now.Before(e.heldUntil):
			held++
		case now.Sub(e.last) > RepairWindow && now.Sub(e.heldUntil) > RepairWindow:
			delete(r.objects, k)
		}
	}
	contestedObjects.WithLabelValues(r.kind).Set(float64(held))
}
