package budgets

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
)

// ready is a member whose quota is synced and quiet.
func ready(name string, spec, used int64) seat {
	return seat{Name: name, Spec: spec, Limited: true, Enforced: spec, Used: used, Synced: true, Quiet: true}
}

func TestPlanShares(t *testing.T) {
	asked := func(s seat) seat { s.Asked = true; return s }
	busy := func(s seat) seat { s.Quiet = false; return s }
	tests := []struct {
		reason      string
		hard, grant int64
		seats       []seat
		want        plan
	}{
		{
			reason: "new members get a grant each from what is free, then what is left",
			hard:   16, grant: 2,
			seats: []seat{ready("a", 0, 0), ready("b", 0, 0), ready("c", 14, 13)},
			want:  plan{Raise: map[string]int64{"a": 2}, Order: []string{"a"}, Held: 14},
		},
		{
			reason: "a member without headroom takes a donor's headroom beyond the donor's own grant",
			hard:   6, grant: 1,
			seats: []seat{ready("a", 2, 2), ready("b", 4, 1)},
			want:  plan{Lower: map[string]int64{"b": 3}, Raise: map[string]int64{"a": 3}, Order: []string{"a"}, Held: 6},
		},
		{
			reason: "a refused workload takes the donor's own headroom too, never below its use",
			hard:   6, grant: 2,
			seats: []seat{asked(ready("a", 4, 4)), ready("b", 2, 1)},
			want:  plan{Lower: map[string]int64{"b": 1}, Raise: map[string]int64{"a": 5}, Order: []string{"a"}, Held: 6},
		},
		{
			reason: "without a refusal the donor keeps its grant: nobody gets anything",
			hard:   6, grant: 2,
			seats: []seat{ready("a", 4, 4), ready("b", 2, 1)},
			want:  plan{Held: 6},
		},
		{
			reason: "a refusal from a member that holds a grant of headroom gets it nothing (a forged Event cannot hoard), and what it holds beyond its grant goes to others",
			hard:   6, grant: 1,
			seats: []seat{asked(ready("a", 4, 1)), ready("b", 2, 2)},
			want:  plan{Lower: map[string]int64{"a": 3}, Raise: map[string]int64{"b": 3}, Order: []string{"b"}, Held: 6},
		},
		{
			reason: "busy members neither give nor get: a refused workload starves",
			hard:   6, grant: 1,
			seats: []seat{busy(ready("a", 2, 2)), busy(ready("b", 4, 1)), asked(ready("c", 0, 0))},
			want:  plan{Held: 6, Starved: []string{"c"}},
		},
		{
			reason: "a lowered share not yet enforced still counts: held is the largest of share, enforced share and use",
			hard:   6, grant: 1,
			seats: []seat{{Name: "a", Spec: 1, Limited: true, Enforced: 5, Used: 1, Synced: true, Quiet: true}, ready("b", 0, 0)},
			want:  plan{Held: 5, Raise: map[string]int64{"b": 1}, Order: []string{"b"}},
		},
		{
			reason: "a budget lowered below the shares: quiet shares are cut, the largest first, until they sum to it (below use if need be: nothing is evicted, new pods are refused), nobody is raised",
			hard:   4, grant: 1,
			seats: []seat{ready("a", 4, 3), ready("b", 3, 3), busy(ready("c", 2, 1)), ready("d", 0, 2)},
			want:  plan{Held: 11, Over: true, Lower: map[string]int64{"a": 1, "b": 1}},
		},
		{
			reason: "over-admitted (kubernetes#123434) with nothing free: the share stays under use, the over-use blocks the member's new pods",
			hard:   4000, grant: 500,
			seats: []seat{ready("a", 2000, 2100), busy(ready("b", 2000, 2000))},
			want:  plan{Held: 4100, Over: true},
		},
		{
			reason: "over-admitted with a little free: the over-use is covered as far as what is free, no further",
			hard:   4000, grant: 500,
			seats: []seat{ready("a", 2000, 2100), busy(ready("b", 1950, 1950))},
			want:  plan{Held: 4050, Over: true, Raise: map[string]int64{"a": 2050}, Order: []string{"a"}},
		},
		{
			reason: "over-admitted beside a quiet member with unused share: that share is lowered to its use and covers the over-use",
			hard:   4000, grant: 500,
			seats: []seat{ready("a", 2000, 2100), ready("b", 2000, 1800)},
			want:  plan{Held: 4100, Over: true, Lower: map[string]int64{"b": 1800}, Raise: map[string]int64{"a": 2100}, Order: []string{"a"}},
		},
		{
			reason: "over-admitted while a lowering is not yet enforced: the old share still counts, nothing is raised",
			hard:   4000, grant: 500,
			seats: []seat{ready("a", 2000, 2100), {Name: "b", Spec: 1900, Limited: true, Enforced: 2000, Used: 1900, Synced: true, Quiet: true}},
			want:  plan{Held: 4100, Over: true},
		},
		{
			reason: "a quota the controller has not synced freezes the raises",
			hard:   6, grant: 1,
			seats: []seat{ready("a", 0, 0), {Name: "b", Spec: 0, Limited: true, Quiet: true}},
			want:  plan{Held: 0},
		},
		{
			reason: "a resource added to the budget is limited from 0",
			hard:   6, grant: 1,
			seats: []seat{{Name: "a", Quiet: true}, ready("b", 1, 1)},
			want:  plan{Held: 1, Lower: map[string]int64{"a": 0}},
		},
		{
			reason: "a share under use (one pod past the quota) is raised to use at no cost",
			hard:   6, grant: 1,
			seats: []seat{ready("a", 2, 3), ready("b", 3, 1)},
			want:  plan{Held: 6, Lower: map[string]int64{"b": 2}, Raise: map[string]int64{"a": 4}, Order: []string{"a"}},
		},
		{
			reason: "a refused workload is served before a member that only wants its grant back",
			hard:   6, grant: 2,
			seats: []seat{ready("a", 2, 2), asked(ready("b", 2, 2))},
			want:  plan{Held: 4, Raise: map[string]int64{"b": 4}, Order: []string{"b"}},
		},
		{
			reason: "a refusal from a member holding exactly a grant of headroom gets it nothing more",
			hard:   10, grant: 2,
			seats: []seat{asked(ready("a", 4, 2)), ready("b", 2, 2)},
			want:  plan{Held: 6, Raise: map[string]int64{"b": 4}, Order: []string{"b"}},
		},
		{
			reason: "a donor giving to two members keeps its grant: what it gave the first counts",
			hard:   6, grant: 1,
			seats: []seat{ready("a", 1, 1), ready("b", 1, 1), ready("d", 4, 2)},
			want:  plan{Held: 6, Lower: map[string]int64{"d": 3}, Raise: map[string]int64{"a": 2}, Order: []string{"a"}},
		},
		{
			reason: "a refused workload served from what is free and a donor's spare takes no more than it needs",
			hard:   7, grant: 2,
			seats: []seat{asked(ready("a", 2, 2)), ready("d", 4, 1)},
			want:  plan{Held: 6, Lower: map[string]int64{"d": 3}, Raise: map[string]int64{"a": 4}, Order: []string{"a"}},
		},
		{
			reason: "a budget lowered below two full shares cuts both to the highest common level that fits",
			hard:   16, grant: 1,
			seats: []seat{ready("a", 10, 10), ready("b", 10, 10)},
			want:  plan{Held: 20, Over: true, Lower: map[string]int64{"a": 8, "b": 8}},
		},
		{
			reason: "shares that fit the lowered budget exactly once a quiet one is lowered to its use are not cut further",
			hard:   4, grant: 1,
			seats: []seat{ready("a", 3, 1), busy(ready("b", 3, 3))},
			want:  plan{Held: 6, Over: true, Lower: map[string]int64{"a": 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got := planShares(tt.hard, tt.grant, tt.seats)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			// The promise: once every write is enforced, the shares sum
			// to at most hard; shares already past it (a budget lowered)
			// only go down.
			before, after := int64(0), int64(0)
			for _, s := range tt.seats {
				share := s.allowed()
				before += share
				if v, ok := got.Lower[s.Name]; ok {
					share = v
				}
				if v, ok := got.Raise[s.Name]; ok {
					share = max(share, v)
				}
				after += share
			}
			if after > tt.hard && (after > before || len(got.Raise) > 0) {
				t.Errorf("shares after the plan sum to %d (before %d), budget %d", after, before, tt.hard)
			}
		})
	}
}

func TestRaiseWithin(t *testing.T) {
	p := plan{Raise: map[string]int64{"a": 4, "b": 3}, Order: []string{"a", "b"}}
	toUse := plan{Raise: map[string]int64{"a": 2100}, Order: []string{"a"}}
	tests := []struct {
		reason string
		hard   int64
		plan   plan
		fresh  []seat
		want   map[string]int64
	}{
		{
			reason: "the donor's lowering is enforced: what is free goes in order, all a planned and the rest to b",
			hard:   6, plan: p,
			fresh: []seat{ready("a", 2, 2), ready("b", 1, 1), ready("c", 0, 0)},
			want:  map[string]int64{"a": 4, "b": 2},
		},
		{
			reason: "the donor's old share is still enforced: only what is free is given, in order",
			hard:   6, plan: p,
			fresh: []seat{ready("a", 2, 2), ready("b", 1, 1), {Name: "c", Spec: 1, Limited: true, Enforced: 2, Used: 1, Synced: true}},
			want:  map[string]int64{"a": 3},
		},
		{
			reason: "a member that used more meanwhile is counted at its use",
			hard:   6, plan: p,
			fresh: []seat{ready("a", 2, 2), ready("b", 1, 1), {Name: "c", Spec: 1, Limited: true, Enforced: 1, Used: 3, Synced: true}},
			want:  map[string]int64{},
		},
		{
			reason: "a quota not synced (a member that just joined) stops every raise",
			hard:   6, plan: p,
			fresh: []seat{ready("a", 2, 2), ready("b", 1, 1), {Name: "d", Limited: true}},
			want:  nil,
		},
		{
			reason: "an over-admitted member is not raised to its use when the shares already sum to hard",
			hard:   4000, plan: toUse,
			fresh: []seat{ready("a", 2000, 2100), ready("b", 2000, 2000)},
			want:  map[string]int64{},
		},
		{
			reason: "an over-admitted member is raised toward its use only as far as the shares leave free",
			hard:   4000, plan: toUse,
			fresh: []seat{ready("a", 2000, 2100), ready("b", 1950, 1950)},
			want:  map[string]int64{"a": 2050},
		},
		{
			reason: "another member's over-use is not free: a raise gives no headroom beyond what members hold, use included",
			hard:   6, plan: p,
			fresh: []seat{ready("a", 2, 2), ready("b", 1, 1), {Name: "c", Spec: 1, Limited: true, Enforced: 1, Used: 2, Synced: true}},
			want:  map[string]int64{"a": 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got := raiseWithin(tt.hard, tt.plan, tt.fresh)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("raises (-want +got):\n%s", diff)
			}
			shares := int64(0)
			for _, s := range tt.fresh {
				shares += max(s.allowed(), got[s.Name])
			}
			if shares > tt.hard {
				t.Errorf("shares after the raises sum to %d, budget %d", shares, tt.hard)
			}
		})
	}
}

func TestParseRefusal(t *testing.T) {
	msg := `Error creating: pods "train-x" is forbidden: exceeded quota: profilekit-budget-lab, requested: requests.cpu=1,requests.nvidia.com/gpu=1, used: requests.cpu=3,requests.nvidia.com/gpu=2, limited: requests.cpu=3,requests.nvidia.com/gpu=2`
	name, res, ok := parseRefusal(msg)
	if !ok || name != "profilekit-budget-lab" || !cmp.Equal(res, []corev1.ResourceName{"requests.cpu", "requests.nvidia.com/gpu"}) {
		t.Errorf("parseRefusal = %q %v %v", name, res, ok)
	}
	if _, _, ok := parseRefusal("Error creating: pods is forbidden: no"); ok {
		t.Error("a message without a quota parsed")
	}
}
