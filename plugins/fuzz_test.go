package plugins_test

import (
	"errors"
	"testing"

	"github.com/profilekit/profilekit/plugins"
)

// FuzzDecode feeds arbitrary host defaults and Profile specs to the strict
// decoder: it must never panic, and every rejection must be a terminal error
// that names the plugin.
func FuzzDecode(f *testing.F) {
	for _, seed := range [][2]string{
		{``, `{"size":3}`},
		{`{"owner":"host"}`, `{"tags":{"a":"b"},"nested":{"deep":["x"]}}`},
		{`{"size":1}`, `{"size":"big"}`},
		{``, `{"size":1,"size":2}`},
		{``, `{"owner":"me"}`},
		{``, `[1,2,3]`},
		{``, `{"nested":{"deep":[1]}}`},
		{`{`, `{}`},
		{``, `{"size":1e400}`},
		{``, "\"\\ud800\""},
	} {
		f.Add(seed[0], seed[1])
	}
	def := testDefinition()
	f.Fuzz(func(t *testing.T, defaults, spec string) {
		cfg, err := def.Decode([]byte(defaults), profileWith(demo(spec)))
		if err == nil {
			if _, ok := cfg.(*testConfig); !ok {
				t.Fatalf("Decode returned %T without an error", cfg)
			}
			return
		}
		var te *plugins.TerminalError
		if !errors.As(err, &te) || !plugins.IsTerminal(err) {
			t.Fatalf("Decode error %v is not terminal", err)
		}
		if te.Reason != plugins.ReasonInvalidSpec && te.Reason != plugins.ReasonInvalidConfig {
			t.Fatalf("Decode error reason %q", te.Reason)
		}
	})
}
