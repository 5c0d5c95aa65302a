package plugintest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/plugintest"
)

// drop takes every item of namespace out of the store.
func (s *store) drop(namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.items, namespace)
}

// grants names an item of namespace as the access it gives.
func (s *store) grants(_ context.Context, namespace string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, item := range s.items[namespace] {
		out = append(out, item+" for "+namespace)
	}
	return out, nil
}

// grantItem is an Apply that gives the Profile's namespace an item,
// recorded ahead.
func grantItem(s *store) func(context.Context, plugins.Request) (plugins.Result, error) {
	return func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
		ns := plugins.Namespace(req.Profile)
		_, err := req.Outside.EnsureAhead(ctx, "Store", "item", 1, func(context.Context) error {
			s.add(ns, "item")
			return nil
		})
		return plugins.Result{}, err
	}
}

// trustingItsRecord takes back only the item its record names: a record
// lost leaves the grant for good.
func trustingItsRecord(s *store) plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: "trustingitsrecord", ApplyFunc: grantItem(s),
			RevokeFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				ns := plugins.Namespace(req.Profile)
				return plugins.Result{}, req.Outside.Sweep(ctx, func(k string) (string, bool) { return k, k == "item" },
					func(context.Context, string, []string) error {
						s.drop(ns)
						return nil
					})
			},
		},
		OutsideState: true,
	}
}

// failingClosed takes back the namespace's item whether or not its record
// names it.
func failingClosed(s *store) plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: "failingclosed", ApplyFunc: grantItem(s),
			RevokeFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				ns := plugins.Namespace(req.Profile)
				if err := req.Outside.Call(ctx, "Store", func(context.Context) error {
					s.drop(ns)
					return nil
				}); err != nil {
					return plugins.Result{}, err
				}
				return plugins.Result{}, req.Outside.Forget(ctx, "item")
			},
		},
		OutsideState: true,
	}
}

// TestHarnessSeesARevokeThatTrustsItsRecord: with the record lost before
// the plugin is removed or the Profile deleted, the record-lost plans flag
// the revoke that takes back only what its record names, and pass the one
// that takes back the Profile's grant whatever the record says.
func TestHarnessSeesARevokeThatTrustsItsRecord(t *testing.T) {
	h := plugintest.Harness{Client: env.Client}
	for _, tt := range []struct {
		def  func(*store) plugins.Definition
		want string
	}{
		{trustingItsRecord, "fail closed: with its record lost, the revoke left outside grants that name the Profile: item for <profile>"},
		{failingClosed, ""},
	} {
		st := &store{}
		def := tt.def(st)
		t.Run(def.Kind(), func(t *testing.T) {
			s := &spy{T: t}
			plans := h.LoseRecordThenRevoke(s, plugintest.Scenario{Def: def, Steps: brokenSteps, Grants: st.grants})
			if plans.Run != 2 {
				t.Errorf("%d record-lost plans, want 2: the record lost after create, then the plugin removed or the Profile deleted", plans.Run)
			}
			if tt.want == "" {
				if plans.Failed > 0 || len(s.errors) > 0 {
					t.Errorf("%d of %d plans failed for a revoke that fails closed:\n%s", plans.Failed, plans.Run, strings.Join(s.errors, "\n"))
				}
				return
			}
			if plans.Failed != plans.Run || len(s.errors) == 0 {
				t.Fatalf("record-lost plans of %s: %d of %d failed; the harness did not see every grant left", def.Kind(), plans.Failed, plans.Run)
			}
			if all := strings.Join(s.errors, "\n"); !strings.Contains(all, tt.want) {
				t.Errorf("no finding says %q:\n%s", tt.want, all)
			}
			t.Logf("%s: %d of %d plans failed; first finding:\n%s", def.Kind(), plans.Failed, plans.Run, s.errors[0])
		})
	}
}

// recordingAfter gives the item first and records it after (Ensure where
// EnsureAhead belongs): a host that stops between the two leaves the
// grant to no record, and so to no revoke.
func recordingAfter(s *store) plugins.Definition {
	def := failingClosed(s)
	funcs := def.Plugin.(plugins.Funcs)
	funcs.KindName = "recordingafter"
	funcs.ApplyFunc = func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
		ns := plugins.Namespace(req.Profile)
		_, err := req.Outside.Ensure(ctx, "Store", "item", 1, func(context.Context) error {
			s.add(ns, "item")
			return nil
		})
		return plugins.Result{}, err
	}
	def.Plugin = funcs
	return def
}

// TestHarnessSeesAGrantBeforeItsRecord: the check made at every outside
// call flags the grant given before the record that names it, and passes
// the plugin that records ahead of the same call.
func TestHarnessSeesAGrantBeforeItsRecord(t *testing.T) {
	h := plugintest.Harness{Client: env.Client}
	for _, tt := range []struct {
		def  func(*store) plugins.Definition
		want string
	}{
		{recordingAfter, "safety: record before grant: item for <profile> was given before the record named"},
		{failingClosed, ""},
	} {
		st := &store{}
		def := tt.def(st)
		t.Run(def.Kind(), func(t *testing.T) {
			s := &spy{T: t}
			plans := h.CrashAfterEveryWrite(s, plugintest.Scenario{Def: def, Steps: brokenSteps, Grants: st.grants})
			if tt.want == "" {
				if plans.Failed > 0 || len(s.errors) > 0 {
					t.Errorf("%d of %d plans failed for a plugin that records ahead:\n%s", plans.Failed, plans.Run, strings.Join(s.errors, "\n"))
				}
				return
			}
			if plans.Failed == 0 || len(s.errors) == 0 {
				t.Fatalf("crash plans of %s: %d run, none failed; the harness did not see the grant before its record", def.Kind(), plans.Run)
			}
			if all := strings.Join(s.errors, "\n"); !strings.Contains(all, tt.want) {
				t.Errorf("no finding says %q:\n%s", tt.want, all)
			}
			t.Logf("%s: %d of %d plans failed; first finding:\n%s", def.Kind(), plans.Failed, plans.Run, s.errors[0])
		})
	}
}
