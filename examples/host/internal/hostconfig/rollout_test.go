package hostconfig_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
)

func TestParseRollout(t *testing.T) {
	cases := []struct {
		reason   string
		rollout  string
		batch    hostconfig.Batch
		minReady time.Duration
		pauses   bool
	}{
		{"a share, as the README writes it", `{batch: "5%", minReady: 30s, pauseOnFailure: true}`, hostconfig.Batch{Percent: 5}, 30 * time.Second, true},
		{"a count", `{batch: 50, minReady: 1m, pauseOnFailure: false}`, hostconfig.Batch{Count: 50}, time.Minute, false},
		{"a count as a string", `{batch: "50"}`, hostconfig.Batch{Count: 50}, hostconfig.DefaultRolloutMinReady, true},
		{"an empty section takes every default", `{}`, hostconfig.Batch{Percent: 10}, hostconfig.DefaultRolloutMinReady, true},
		{"minReady 0 starts a batch as soon as the last is Ready", `{minReady: 0s}`, hostconfig.Batch{Percent: 10}, 0, true},
	}
	for _, c := range cases {
		cfg, err := hostconfig.Parse("host.yaml", []byte("rollout: "+c.rollout+"\nplugins: {quotas: {enabled: all}}\n"), registry(t))
		if err != nil {
			t.Fatalf("%s: %v", c.reason, err)
		}
		r := cfg.Rollout
		if r == nil || r.Batch != c.batch || r.Wait() != c.minReady || r.Pauses() != c.pauses || r.Deadline() != 0 {
			t.Errorf("%s: got %+v (wait %s, pauses %v, deadline %s)", c.reason, r, r.Wait(), r.Pauses(), r.Deadline())
		}
	}
	cfg, err := hostconfig.Parse("host.yaml", []byte("rollout: {progressDeadline: 10m}\nplugins: {quotas: {enabled: all}}\n"), registry(t))
	if err != nil || cfg.Rollout.Deadline() != 10*time.Minute {
		t.Errorf("progressDeadline 10m: %+v, %v", cfg.Rollout, err)
	}
	cfg, err = hostconfig.Parse("host.yaml", []byte("plugins: {quotas: {enabled: all}}\n"), registry(t))
	if err != nil || cfg.Rollout != nil {
		t.Errorf("without a rollout section the host rolls out at once: %+v, %v", cfg, err)
	}
}

func TestParseRolloutErrors(t *testing.T) {
	cases := []struct{ rollout, want string }{
		{`{batch: "0%"}`, `host.yaml: rollout.batch: want a share above 0% and at most 100%`},
		{`{batch: "150%"}`, `host.yaml: rollout.batch: want a share above 0% and at most 100%`},
		{`{batch: 0}`, `host.yaml: rollout.batch: want a positive count of Profiles (50) or a share ("5%")`},
		{`{batch: -3}`, `host.yaml: rollout.batch: want a positive count`},
		{`{batch: five}`, `host.yaml: rollout.batch: want a positive count`},
		{`{minReady: soon}`, `host.yaml: rollout.minReady: want a duration such as 6h`},
		{`{minReady: -1s}`, `host.yaml: rollout.minReady: must be positive, got -1s`},
		{`{batches: 5}`, `host.yaml: rollout.batches: unknown field`},
		{`{pauseOnFailure: maybe}`, `host.yaml: rollout.pauseOnFailure: cannot use`},
		{`{progressDeadline: 0s}`, `host.yaml: rollout.progressDeadline: must be positive, got 0s`},
		{`{progressDeadline: -1m}`, `host.yaml: rollout.progressDeadline: must be positive, got -1m0s`},
	}
	for _, c := range cases {
		_, err := hostconfig.Parse("host.yaml", []byte("rollout: "+c.rollout+"\nplugins: {quotas: {enabled: all}}\n"), registry(t))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rollout %s: error %v, want %q", c.rollout, err, c.want)
		}
	}
}

func TestChanged(t *testing.T) {
	parse := func(plugins string) map[string]hostconfig.Plugin {
		cfg, err := hostconfig.Parse("host.yaml", []byte("plugins: "+plugins+"\n"), registry(t))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Plugins
	}
	stable := parse(`{quotas: {enabled: all, defaults: {hard: {limits.cpu: "2"}}}, noconfig: {enabled: all}}`)
	cases := []struct {
		reason, candidate string
		want              []string
	}{
		{"the same sections", `{noconfig: {enabled: all}, quotas: {enabled: all, defaults: {hard: {limits.cpu: "2"}}}}`, nil},
		{"changed defaults", `{quotas: {enabled: all, defaults: {hard: {limits.cpu: "4"}}}, noconfig: {enabled: all}}`, []string{"quotas"}},
		{"a plugin disabled for all", `{quotas: {enabled: all, defaults: {hard: {limits.cpu: "2"}}}, noconfig: {enabled: off}}`, []string{"noconfig"}},
		{"a section dropped", `{quotas: {enabled: all, defaults: {hard: {limits.cpu: "2"}}}}`, []string{"noconfig"}},
	}
	for _, c := range cases {
		if d := cmp.Diff(c.want, hostconfig.Changed(stable, parse(c.candidate))); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.reason, d)
		}
	}
}

func TestStagingKeepsStablePlugins(t *testing.T) {
	cfg, err := hostconfig.Parse("host.yaml", []byte("plugins: {quotas: {enabled: off}, noconfig: {enabled: all}}\n"), registry(t))
	if err != nil {
		t.Fatal(err)
	}
	stable, err := hostconfig.Parse("host.yaml", []byte("plugins: {quotas: {enabled: all}, noconfig: {enabled: all}}\n"), registry(t))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"noconfig"}, cfg.Enabled()); d != "" {
		t.Errorf("without a rollout (-want +got):\n%s", d)
	}
	cfg.Staging = &hostconfig.Staging{Stable: stable.Plugins}
	// The Profiles not yet in a batch keep quotas: its controller runs.
	if d := cmp.Diff([]string{"noconfig", "quotas"}, cfg.Enabled()); d != "" {
		t.Errorf("during a rollout that turns quotas off (-want +got):\n%s", d)
	}
}
