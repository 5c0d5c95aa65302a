package plugintest

// This file holds the plans in which the outside-state record is lost
// before the Profile goes: revocation fails closed, and takes back every
// grant of the Profile's whether or not a record names it.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins/outside"
)

// LoseRecordThenRevoke runs, for every step s after which the run
// without perturbation holds a key in the Profile's outside-state record,
// a plan in which that record is lost once step s is quiet (deleted: an
// administrator's mistake, a restore without it, a record moved from an
// earlier version's that a tenant had edited), then the Profile is
// deleted and the host runs the deletion to quiet; and, where step s+1
// removes the plugin, the same with that removal instead. Revocation
// fails closed: no outside grant ([Scenario.Grants]) may name the Profile
// then but someone else's, whatever the record said. A scenario without
// Grants has no such plan.
func (h Harness) LoseRecordThenRevoke(t T, sc Scenario) Plans {
	t.Helper()
	const pattern = "record-lost"
	if sc.Grants == nil {
		return Plans{}
	}
	base, plans := h.begin(t, sc, pattern)
	for s := 0; s+1 < len(sc.Steps) && !sc.Steps[s].Delete; s++ {
		if !base.recorded[s] {
			continue
		}
		thens := []moveOn{{next: -1}}
		if sc.Steps[s+1].Remove {
			thens = append([]moveOn{{next: s + 1}}, thens...)
		}
		for _, then := range thens {
			plan := fmt.Sprintf("%s %s step %d (%s), then %s", sc.Def.Kind(), pattern, s, sc.Steps[s].Name, then.step(sc).Name)
			h.try(&plans, plan, func() bool { return h.recordLost(t, sc, s, then, plan) })
		}
	}
	return plans
}

// recordLost runs one plan of LoseRecordThenRevoke and reports whether
// the revoke failed closed.
func (h Harness) recordLost(t T, sc Scenario, s int, then moveOn, plan string) bool {
	t.Helper()
	ctx := quietLogs(t.Context())
	r, err := h.newRun(ctx, sc, "plan")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= s; i++ {
		if err := r.set(ctx, sc.Steps[i]); err != nil {
			t.Fatal(err)
		}
		if _, err := r.quiet(ctx); err != nil {
			fail(t, plan, "step %d before the perturbation: %v", i, err)
			return false
		}
	}
	if err := r.loseRecord(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.set(ctx, then.step(sc)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.quiet(ctx); err != nil {
		fail(t, plan, "after the record was lost: %v", err)
		return false
	}
	grants, err := sc.Grants(ctx, r.profile.Name)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, g := range grants {
		if g = r.generic(g); !r.foreign[g] {
			left = append(left, g)
		}
	}
	if len(left) > 0 {
		slices.Sort(left)
		fail(t, plan, "fail closed: with its record lost, the revoke left outside grants that name the Profile: %s", strings.Join(left, "; "))
		return false
	}
	return true
}

// loseRecord deletes the Profile's outside-state record from the API
// server.
func (r *run) loseRecord(ctx context.Context) error {
	record := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.h.recordsNamespace(), Name: outside.RecordName(r.sc.Def.Kind(), r.profile.UID)}}
	return client.IgnoreNotFound(r.h.Client.Delete(ctx, record))
}
