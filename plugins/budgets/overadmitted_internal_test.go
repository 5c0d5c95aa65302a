package budgets

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestOverAdmitted: use that grew past the share the API server enforced
// since the last pass is an over-admission of the member
// (kubernetes/kubernetes#123434); use past a share that was cut since, in a
// quota first seen, or in a quota made again under the same name (a new
// uid: its use is not the old quota's use grown) is not.
func TestOverAdmitted(t *testing.T) {
	quota := func(uid string) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: QuotaName("lab"), UID: types.UID(uid)}}
	}
	for _, c := range []struct {
		reason     string
		prev       *seenSeat // the last pass's read; nil when none
		uid        string
		used, hard int64
		want       int64
	}{
		{"use grew past the share", &seenSeat{uid: "1", used: 1000, enforced: 2000}, "1", 3500, 2000, 1500},
		{"use grew past the share from past it", &seenSeat{uid: "1", used: 2500, enforced: 2000}, "1", 3000, 2000, 500},
		{"use grew within the share", &seenSeat{uid: "1", used: 1000, enforced: 2000}, "1", 2000, 2000, 0},
		{"a quota first seen", nil, "1", 3000, 2000, 0},
		{"the quota made again", &seenSeat{uid: "1", used: 1000, enforced: 2000}, "2", 3000, 2000, 0},
		{"the share cut since", &seenSeat{uid: "1", used: 1000, enforced: 3000}, "1", 3000, 2000, 0},
	} {
		b := &balancer{seen: map[string]seenSeat{}, admitted: map[string]int{}}
		key := "a/lab/" + string(corev1.ResourceRequestsCPU)
		if c.prev != nil {
			b.seen[key] = *c.prev
		}
		seen := map[string]seenSeat{}
		got := b.overAdmitted(seen, "lab", corev1.ResourceRequestsCPU, quota(c.uid), seat{Name: "a", Used: c.used, Enforced: c.hard})
		if got != c.want {
			t.Errorf("%s: over-admitted %d, want %d", c.reason, got, c.want)
		}
		if want := (seenSeat{uid: c.uid, used: c.used, enforced: c.hard}); seen[key] != want {
			t.Errorf("%s: seen %+v, want %+v", c.reason, seen[key], want)
		}
		if n, want := b.admitted["a/lab"], min(int(c.want), 1); n != want {
			t.Errorf("%s: over-admissions of the member %d, want %d", c.reason, n, want)
		}
	}
	if got := (&balancer{}).overAdmitted(map[string]seenSeat{}, "lab", corev1.ResourceRequestsCPU, nil, seat{Name: "a", Used: 5}); got != 0 {
		t.Errorf("a member without a quota: over-admitted %d, want 0", got)
	}
}
