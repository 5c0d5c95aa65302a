package opa

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
)

func newClient(t *testing.T) *Client {
	t.Helper()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestQuery(t *testing.T) {
	ctx := t.Context()
	c := newClient(t)
	if err := srv.PutData(ctx, "querytest/doc", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Query(ctx, "querytest/doc", nil)
	if err != nil || string(got) != `{"a":1}` {
		t.Errorf("Query(querytest/doc) = %s, %v; want {\"a\":1}", got, err)
	}
	if _, err := c.Query(ctx, "querytest.missing", nil); !errors.Is(err, ErrUndefined) {
		t.Errorf("Query of an undefined document = %v, want ErrUndefined", err)
	}
	policy := "package querytest\n\necho := input.x\n"
	if err := srv.PutPolicy(ctx, "querytest", []byte(policy)); err != nil {
		t.Fatal(err)
	}
	got, err = c.Query(ctx, "querytest/echo", map[string]any{"x": "hi"})
	if err != nil || string(got) != `"hi"` {
		t.Errorf("Query(querytest/echo, input) = %s, %v; want \"hi\"", got, err)
	}
	if _, err := c.Query(ctx, "querytest/echo", nil); !errors.Is(err, ErrUndefined) {
		t.Errorf("a rule whose body does not hold = %v, want ErrUndefined", err)
	}
}

// TestExamplePolicy reads the example policy's grants, in both shapes, from
// the real OPA that serves examples/opa.
func TestExamplePolicy(t *testing.T) {
	c := newClient(t)
	want := map[string][]Bucket{
		"unclassified": {{Name: "census-shared", Volume: "census-shared", Readers: []string{"team-c"}, Writers: []string{"team-a", "team-b"}, Identity: "sp-census"}},
		"protected-b":  {{Name: "labour-raw", Volume: "labour-raw-2026", Subfolder: "2026", Readers: []string{"team-a", "team-b"}, Writers: []string{"team-c"}, Identity: "sp-labour"}},
	}
	for class, w := range want {
		raw, err := c.Query(t.Context(), "storage/grants/"+class, nil)
		if err != nil {
			t.Fatal(err)
		}
		g, err := Decode(raw)
		if err != nil {
			t.Fatalf("%s: %v in %s", class, err, raw)
		}
		if diff := cmp.Diff(w, g.Buckets()); diff != "" {
			t.Errorf("%s grants (-want +got):\n%s", class, diff)
		}
		raw, err = c.Query(t.Context(), "storage/gateway/"+class, nil)
		if err != nil {
			t.Fatal(err)
		}
		gw, err := Decode(raw)
		if err != nil {
			t.Fatalf("%s gateway: %v in %s", class, err, raw)
		}
		// The gateway shape has no subfolder.
		for i := range w {
			w[i].Subfolder = ""
		}
		if diff := cmp.Diff(w, gw.Buckets()); diff != "" {
			t.Errorf("%s gateway grants (-want +got):\n%s", class, diff)
		}
	}
}

func list(bs ...map[string]any) []map[string]any { return bs }

func TestPollerSafety(t *testing.T) {
	ctx := t.Context()
	path := "pollertest" + rand.String(4)
	name := "test-" + path
	p, err := NewPoller(name, newClient(t), path+"/grants", nil, Options{Interval: time.Hour, MaxDropShare: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	put := func(v any) {
		t.Helper()
		if err := srv.PutData(ctx, path+"/grants", v); err != nil {
			t.Fatal(err)
		}
	}
	poll := func(wantNotify []string, wantReason string) State {
		t.Helper()
		got := p.Poll(ctx)
		if diff := cmp.Diff(wantNotify, got); diff != "" {
			t.Errorf("notified (-want +got):\n%s", diff)
		}
		st := p.State()
		var re *RefreshError
		switch {
		case wantReason == "" && st.Err != nil:
			t.Errorf("state error = %v, want none", st.Err)
		case wantReason != "" && (!errors.As(st.Err, &re) || re.Reason != wantReason):
			t.Errorf("state error = %v, want reason %s", st.Err, wantReason)
		}
		return st
	}
	good := list(
		map[string]any{"bucketName": "census", "readers": []string{"a", "b"}, "writers": []string{"c"}},
		map[string]any{"bucketName": "labour", "readers": []string{"d"}},
	)

	t.Run("undefined before the first document is not an empty snapshot", func(t *testing.T) {
		st := poll(nil, ReasonUndefined)
		if st.Synced {
			t.Error("Synced after an undefined result")
		}
	})
	t.Run("the first document concerns every namespace in it", func(t *testing.T) {
		put(good)
		st := poll([]string{"a", "b", "c", "d"}, "")
		if !st.Synced || st.Grants.Len() != 4 {
			t.Errorf("state = %+v, want 4 grants", st)
		}
	})
	t.Run("no change notifies no one", func(t *testing.T) {
		before := testutil.ToFloat64(notifiedTotal.WithLabelValues(name))
		poll(nil, "")
		poll(nil, "")
		if got := testutil.ToFloat64(notifiedTotal.WithLabelValues(name)) - before; got != 0 {
			t.Errorf("namespaces notified by unchanged polls = %v, want 0", got)
		}
	})
	t.Run("a change notifies only the namespaces it concerns", func(t *testing.T) {
		good[1]["readers"] = []string{"d", "e"}
		put(good)
		poll([]string{"e"}, "")
	})
	keep := p.State().Grants
	kept := func(t *testing.T) {
		t.Helper()
		if diff := cmp.Diff(keep.Buckets(), p.State().Grants.Buckets()); diff != "" {
			t.Errorf("snapshot changed (-want +got):\n%s", diff)
		}
	}
	t.Run("a malformed document keeps the last good snapshot", func(t *testing.T) {
		before := testutil.ToFloat64(refreshTotal.WithLabelValues(name, ReasonMalformed))
		put(list(map[string]any{"bucketName": "Not_A_Container", "readers": []string{"a"}}))
		// The Profiles of the kept grants hear that their source is stale.
		poll([]string{"a", "b", "c", "d", "e"}, ReasonMalformed)
		kept(t)
		put("just a string")
		poll([]string{"a", "b", "c", "d", "e"}, ReasonMalformed)
		poll(nil, ReasonMalformed)
		kept(t)
		if got := testutil.ToFloat64(refreshTotal.WithLabelValues(name, ReasonMalformed)) - before; got != 3 {
			t.Errorf("malformed refreshes counted = %v, want 3", got)
		}
		if testutil.ToFloat64(healthy.WithLabelValues(name)) != 0 {
			t.Error("source reported healthy")
		}
	})
	t.Run("recovery notifies every namespace and takes the document", func(t *testing.T) {
		put(good)
		poll([]string{"a", "b", "c", "d", "e"}, "")
		if testutil.ToFloat64(healthy.WithLabelValues(name)) != 1 {
			t.Error("source reported unhealthy")
		}
	})
	t.Run("an empty document after a non-empty one keeps the last good snapshot", func(t *testing.T) {
		put([]any{})
		st := poll([]string{"a", "b", "c", "d", "e"}, ReasonDropTooLarge)
		if !strings.Contains(st.Err.Error(), "withdraws 5 of 5 grants") {
			t.Errorf("error = %v, want it to count the withdrawn grants", st.Err)
		}
		kept(t)
	})
	t.Run("a document withdrawn from OPA is undefined and keeps the snapshot", func(t *testing.T) {
		put(good)
		poll([]string{"a", "b", "c", "d", "e"}, "")
		req := strings.NewReader("")
		_ = req
		if err := srv.PutData(ctx, path, map[string]any{}); err != nil {
			t.Fatal(err)
		}
		poll([]string{"a", "b", "c", "d", "e"}, ReasonUndefined)
		kept(t)
	})
	t.Run("a drop within the allowed share is taken", func(t *testing.T) {
		put(good)
		poll([]string{"a", "b", "c", "d", "e"}, "")
		put(good[:1]) // withdraws d and e: 2 of 5
		poll([]string{"d", "e"}, "")
	})
	t.Run("an unreachable OPA keeps the snapshot, and recovery resumes", func(t *testing.T) {
		keep = p.State().Grants
		if err := srv.Stop(); err != nil {
			t.Fatal(err)
		}
		poll([]string{"a", "b", "c"}, ReasonUnreachable)
		kept(t)
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		// A restarted OPA lost what the API pushed: undefined, still kept.
		poll([]string{"a", "b", "c"}, ReasonUndefined)
		put(good[:1])
		poll([]string{"a", "b", "c"}, "")
		kept(t)
	})
}

func TestPollerRunNotifiesWithinOneInterval(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	path := "runtest" + rand.String(4)
	if err := srv.PutData(ctx, path, list(map[string]any{"bucketName": "census", "readers": []string{"a"}})); err != nil {
		t.Fatal(err)
	}
	interval := 200 * time.Millisecond
	p, err := NewPoller("test-"+path, newClient(t), path, nil, Options{Interval: interval})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []string, 10)
	go func() { _ = p.Run(ctx, func(ns []string) { got <- ns }) }()
	select {
	case first := <-got:
		if !cmp.Equal(first, []string{"a"}) {
			t.Fatalf("first notification = %v, want [a]", first)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no first notification")
	}
	changed := time.Now()
	if err := srv.PutData(ctx, path, list(map[string]any{"bucketName": "census", "readers": []string{"a", "b"}})); err != nil {
		t.Fatal(err)
	}
	select {
	case ns := <-got:
		if !cmp.Equal(ns, []string{"b"}) {
			t.Errorf("notified %v, want [b]", ns)
		}
		if d := time.Since(changed); d > interval+100*time.Millisecond {
			t.Errorf("notified after %s, want within one interval (%s)", d, interval)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notification")
	}
	// Polls that find nothing changed notify no one.
	select {
	case ns := <-got:
		t.Errorf("notified %v with the document unchanged", ns)
	case <-time.After(3 * interval):
	}
}

func TestConfigMapSource(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := "grants-" + rand.String(5)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Another ConfigMap in the namespace is none of the source's business.
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns}, Data: map[string]string{"x": "not json"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := NewConfigMapSource("test-cm-"+ns, cs, ns, "grants", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var notified [][]string
	go func() { _ = s.Run(ctx, func(n []string) { mu.Lock(); notified = append(notified, n); mu.Unlock() }) }()
	waitState := func(what string, ok func(State) bool) State {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if st := s.State(); ok(st) {
				return st
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("source never %s: %+v", what, s.State())
		return State{}
	}
	reason := func(r string) func(State) bool {
		return func(st State) bool {
			var re *RefreshError
			return errors.As(st.Err, &re) && re.Reason == r
		}
	}
	waitState("reported the missing ConfigMap", reason(ReasonMissing))

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "grants", Namespace: ns}, Data: map[string]string{
		"unclassified": `[{"bucketName":"census","pvName":"census","readers":["a"],"writers":["b"],"spn":"sp"}]`,
		"more":         `[{"bucketName":"labour","subfolder":"x","readers":["c"]}]`,
	}}
	if cm, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	st := waitState("took the ConfigMap", func(st State) bool { return st.Synced && st.Err == nil })
	if diff := cmp.Diff([]string{"a", "b", "c"}, st.Grants.Namespaces()); diff != "" {
		t.Errorf("namespaces (-want +got):\n%s", diff)
	}
	keep := st.Grants

	cm.Data["more"] = `[{"bucketName":"labour","subfolder":"x","readers":["c"]`
	if cm, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	st = waitState("rejected the malformed key", reason(ReasonMalformed))
	if !strings.Contains(st.Err.Error(), "key more") {
		t.Errorf("error = %v, want it to name the key", st.Err)
	}
	if diff := cmp.Diff(keep.Buckets(), st.Grants.Buckets()); diff != "" {
		t.Errorf("snapshot changed (-want +got):\n%s", diff)
	}

	cm.Data = map[string]string{"unclassified": `[]`}
	if cm, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitState("rejected emptying", reason(ReasonDropTooLarge))

	cm.Data = map[string]string{"unclassified": `[{"bucketName":"census","pvName":"census","readers":["a","d"],"writers":["b"],"spn":"sp"}]`,
		"more": `[{"bucketName":"labour","subfolder":"x","readers":["c"]}]`}
	if _, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	st = waitState("took the change", func(st State) bool { return st.Err == nil && st.Grants.Len() == 4 })

	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "grants", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	st = waitState("reported the deleted ConfigMap", reason(ReasonMissing))
	if st.Grants.Len() != 4 {
		t.Errorf("grants after deletion = %d, want the 4 kept", st.Grants.Len())
	}
	mu.Lock()
	defer mu.Unlock()
	want := [][]string{
		{"a", "b", "c"},      // first snapshot
		{"a", "b", "c"},      // malformed: stale
		{"a", "b", "c"},      // emptying rejected: another reason
		{"a", "b", "c", "d"}, // recovered
		{"a", "b", "c", "d"}, // deleted: stale
	}
	if diff := cmp.Diff(want, notified); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
}

func TestOptionsDefaults(t *testing.T) {
	for _, tc := range []struct {
		in      Options
		want    Options
		wantErr string
	}{
		{in: Options{}, want: Options{Interval: 30 * time.Second, MaxDropShare: DefaultMaxDropShare}},
		{in: Options{Interval: time.Minute, MaxDropShare: 0.2}, want: Options{Interval: time.Minute, MaxDropShare: 0.2}},
		{in: Options{MaxDropShare: 1}, want: Options{Interval: 30 * time.Second, MaxDropShare: 1}},
		{in: Options{Interval: -time.Second}, wantErr: "want a positive duration"},
		{in: Options{MaxDropShare: -0.1}, wantErr: "want a share between 0 and 1"},
		{in: Options{MaxDropShare: 1.01}, wantErr: "want a share between 0 and 1"},
	} {
		got, err := tc.in.withDefaults()
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%+v: %v, want an error with %q", tc.in, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || got.Interval != tc.want.Interval || got.MaxDropShare != tc.want.MaxDropShare):
			t.Errorf("%+v: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}
