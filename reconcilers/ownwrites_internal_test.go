package reconcilers

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/profilekit/profilekit/plugins"
)

// TestOwnWritesOrder follows the events of one ConfigMap through the orders
// in which a write's answer and its event can arrive, and a change by
// someone else in between.
func TestOwnWritesOrder(t *testing.T) {
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	at := func(rv string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", ResourceVersion: rv}}
		cm.SetGroupVersionKind(gvk)
		return cm
	}
	type step struct {
		write  string // begin a write, answered with this version ("!" fails)
		answer bool   // the answer to the write begun before
		event  string // an event at this version
	}
	for name, tc := range map[string]struct {
		steps      []step
		passed     []bool // per event, in order
		wantMissed bool
	}{
		"answer, then its event": {
			steps:  []step{{write: "5"}, {answer: true}, {event: "5"}},
			passed: []bool{false},
		},
		"event before the answer": {
			steps:  []step{{write: "5"}, {event: "5"}, {answer: true}},
			passed: []bool{false},
		},
		"someone else's change while the write is in flight": {
			steps:      []step{{write: "6"}, {event: "5"}, {event: "6"}, {answer: true}},
			passed:     []bool{false, false},
			wantMissed: true,
		},
		"someone else's change after ours": {
			steps:  []step{{write: "5"}, {answer: true}, {event: "5"}, {event: "7"}},
			passed: []bool{false, true},
		},
		"someone else's change before our echo arrived": {
			steps:  []step{{write: "5"}, {answer: true}, {event: "7"}},
			passed: []bool{true},
		},
		"a failed write with an event held back": {
			steps:      []step{{write: "!"}, {event: "4"}, {answer: true}, {event: "8"}},
			passed:     []bool{false, true},
			wantMissed: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			own := newOwnWrites()
			pass := own.pass()
			pred := own.predicate(gvk)
			var answer string
			var passed []bool
			for _, s := range tc.steps {
				switch {
				case s.write != "":
					answer = s.write
					pass.Writing(at(""))
				case s.answer:
					if answer == "!" {
						pass.Wrote(at(""), "", errors.New("refused"))
					} else {
						pass.Wrote(at(""), answer, nil)
					}
				default:
					obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", ResourceVersion: s.event}}
					passed = append(passed, pred.Update(eventUpdate(obj)))
				}
			}
			if len(passed) != len(tc.passed) {
				t.Fatalf("passed %v, want %v", passed, tc.passed)
			}
			for i := range passed {
				if passed[i] != tc.passed[i] {
					t.Errorf("event %d passed = %v, want %v (all: %v)", i, passed[i], tc.passed[i], passed)
				}
			}
			if pass.missed != tc.wantMissed {
				t.Errorf("missed = %v, want %v", pass.missed, tc.wantMissed)
			}
			if n := own.len(); n != 0 {
				t.Errorf("%d entries left once every write was answered and echoed, want none", n)
			}
		})
	}
}

func eventUpdate(obj *corev1.ConfigMap) event.UpdateEvent {
	return event.UpdateEvent{ObjectOld: obj, ObjectNew: obj}
}

// TestOwnWritesRecall: a write is recalled, with its hash, from its answer
// until its event comes or the object is deleted; never while it is in
// flight or after it failed.
func TestOwnWritesRecall(t *testing.T) {
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	written := func(hash string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", Annotations: map[string]string{plugins.AnnotationAppliedHash: hash}}}
		cm.SetGroupVersionKind(gvk)
		return cm
	}
	at := func(rv string) *corev1.ConfigMap {
		cm := written("")
		cm.ResourceVersion = rv
		return cm
	}
	own := newOwnWrites()
	pred := own.predicate(gvk)
	pass := own.pass()
	recalled := func(when, want string) {
		t.Helper()
		hash, ok := pass.Unseen(written(""))
		if got := map[bool]string{true: hash, false: "none"}[ok]; got != want {
			t.Errorf("%s: recalled %s, want %s", when, got, want)
		}
	}

	recalled("before any write", "none")
	pass.Writing(written("h1"))
	recalled("while the write is in flight", "none")
	pass.Wrote(written("h1"), "5", nil)
	recalled("after the answer", "h1")
	pred.Update(eventUpdate(at("5")))
	recalled("after its event", "none")

	pass.Writing(written("h2"))
	pass.Wrote(written("h2"), "6", nil)
	recalled("after a second answer", "h2")
	pred.Delete(event.DeleteEvent{Object: at("6")})
	recalled("after a deletion", "none")

	pass.Writing(written("h3"))
	pass.Wrote(written("h3"), "", errors.New("refused"))
	recalled("after a failed write", "none")
}
