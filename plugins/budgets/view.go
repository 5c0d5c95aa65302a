package budgets

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// view is what the balancer last saw of each budget, for Apply to report:
// Apply itself reads only its own namespace. It lives in the plugin value,
// shared by the Runner and every pass, never in a package variable.
type view struct {
	mu      sync.RWMutex
	synced  bool
	budgets map[string]budgetView
}

// budgetView is one budget after a balancer pass.
type budgetView struct {
	// Over lists the resources members hold beyond the budget, with what
	// they hold.
	Over map[corev1.ResourceName]int64
	// Starved maps a member that asked and got nothing to the resources it
	// waits for.
	Starved map[string][]corev1.ResourceName
	// OverUse maps a member whose use is beyond its own share to what, by
	// resource, and Admitted a member to how many times the balancer saw
	// the API server admit its pods past its enforced share.
	OverUse  map[string][]overUse
	Admitted map[string]int
}

// overUse is one resource of a member used beyond its share, in the
// resource's units.
type overUse struct {
	Resource    corev1.ResourceName
	Used, Share int64
}

func (v *view) set(budgets map[string]budgetView) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.synced, v.budgets = true, budgets
}

// budget returns the last view of the named budget, and whether the
// balancer has run at all in this process.
func (v *view) budget(name string) (budgetView, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.budgets[name], v.synced
}
