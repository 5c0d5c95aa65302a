package plugins_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/profilekit/profilekit/plugins"
)

func TestRegistry(t *testing.T) {
	def := func(kind string) plugins.Definition { return plugins.Definition{Plugin: plugins.Funcs{KindName: kind}} }
	r, err := plugins.NewRegistry(def("quotas"), def("limitrange"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"limitrange", "quotas"}, r.Kinds()); diff != "" {
		t.Errorf("Kinds (-want +got):\n%s", diff)
	}
	if _, err := plugins.NewRegistry(plugins.Definition{Plugin: plugins.Funcs{KindName: plugins.CoreKind}, Upstream: true}); err != nil {
		t.Errorf("core with Upstream: %v", err)
	}
	if d, ok := r.Get("quotas"); !ok || d.Kind() != "quotas" || d.Condition() != "QuotasReady" || plugins.FieldManagerFor(d.Kind()) != "profilekit-quotas" {
		t.Errorf("Get(quotas) = %+v, %v", d, ok)
	}
	for _, tt := range []struct {
		reason  string
		defs    []plugins.Definition
		wantErr string
	}{
		{reason: "a kind twice", defs: []plugins.Definition{def("a"), def("a")}, wantErr: `plugin kind "a" registered twice`},
		{reason: "a kind with an underscore", defs: []plugins.Definition{def("Bad_Kind")}, wantErr: `plugin kind "Bad_Kind"`},
		{reason: "no plugin", defs: []plugins.Definition{{}}, wantErr: "without a plugin"},
		{reason: "upstream's objects for a kind other than core", defs: []plugins.Definition{{Plugin: plugins.Funcs{KindName: "quotas"}, Upstream: true}}, wantErr: "only the core plugin may write the upstream controller's objects"},
		{reason: "an empty kind", defs: []plugins.Definition{def("")}, wantErr: `plugin kind ""`},
	} {
		if _, err := plugins.NewRegistry(tt.defs...); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: NewRegistry error = %v, want %q", tt.reason, err, tt.wantErr)
		}
	}
}

// Upstream's CamelCase kinds register, and name their condition, field
// manager and finalizer as they are.
func TestRegistryTakesUpstreamKinds(t *testing.T) {
	def := plugins.Definition{Plugin: plugins.Funcs{KindName: "AwsIamForServiceAccount"}, OutsideState: true}
	r, err := plugins.NewRegistry(def)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := r.Get("AwsIamForServiceAccount")
	got := []string{d.Condition(), plugins.FieldManagerFor(d.Kind()), d.Finalizer()}
	want := []string{"AwsIamForServiceAccountReady", "profilekit-AwsIamForServiceAccount", "profilekit.dev/AwsIamForServiceAccount"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("condition, field manager, finalizer (-want +got):\n%s", diff)
	}
}
