package hostconfig_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/quotas"
)

func registry(t *testing.T) *plugins.Registry {
	t.Helper()
	noConfig := plugins.Definition{Plugin: plugins.Funcs{KindName: "noconfig"}}
	reg, err := plugins.NewRegistry(quotas.Definition(), noConfig)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		reason string
		yaml   string
		// want are the lines of the error, each "host.yaml: <field>: <problem>"
		// (or a fragment of it).
		want []string
	}{
		{
			reason: "an unknown top-level field is named with its path",
			yaml:   "resyncPeriod: 5m\nresync: 5m\nplugins: {quotas: {enabled: all}}\n",
			want:   []string{"host.yaml: resync: unknown field"},
		},
		{
			reason: "an unknown field inside a plugin section carries the plugin's path",
			yaml:   "plugins:\n  quotas:\n    enabled: all\n    retain: Delete\n",
			want:   []string{"host.yaml: plugins.quotas.retain: unknown field"},
		},
		{
			reason: "an unknown field in a nested host section",
			yaml:   "client: {qps: 10, burts: 20}\nplugins: {quotas: {}}\n",
			want:   []string{"host.yaml: client.burts: unknown field"},
		},
		{
			reason: "a duplicate key is an error, not a silent last-one-wins",
			yaml:   "plugins:\n  quotas: {enabled: all}\n  quotas: {enabled: off}\n",
			want:   []string{`host.yaml: yaml: unmarshal errors:`, `line 3: key "quotas" already set in map`},
		},
		{
			reason: "a bad shard selector",
			yaml:   "shardSelector: {matchExpressions: [{key: tier, operator: Within, values: [a]}]}\nplugins: {quotas: {}}\n",
			want:   []string{`host.yaml: shardSelector: "Within" is not a valid label selector operator`},
		},
		{
			reason: "a bad plugin selector",
			yaml:   "plugins:\n  quotas:\n    enabled: all\n    selector: {matchLabels: {\"bad key!\": x}}\n",
			want:   []string{`host.yaml: plugins.quotas.selector: `, `bad key!`},
		},
		{
			reason: "a selector only narrows enabled: all",
			yaml:   "plugins:\n  quotas:\n    enabled: listed\n    selector: {matchLabels: {a: b}}\n",
			want:   []string{"host.yaml: plugins.quotas.selector: only narrows enabled: all, and enabled is listed"},
		},
		{
			reason: "plugin defaults that fail the plugin's validation name the plugin, the field and the value",
			yaml:   "plugins:\n  quotas:\n    enabled: all\n    defaults:\n      caps: {limits.cpu: \"-1\"}\n",
			want:   []string{"host.yaml: plugins.quotas.defaults: plugin quotas: host defaults: caps[limits.cpu]=-1 is negative"},
		},
		{
			reason: "plugin defaults with an unknown field",
			yaml:   "plugins:\n  quotas:\n    defaults: {hardd: {limits.cpu: \"2\"}}\n",
			want:   []string{`host.yaml: plugins.quotas.defaults: plugin quotas: host defaults: unknown field "hardd"`},
		},
		{
			reason: "defaults for a plugin that takes no config",
			yaml:   "plugins:\n  noconfig:\n    defaults: {a: 1}\n",
			want:   []string{"host.yaml: plugins.noconfig.defaults: plugin noconfig: takes no config"},
		},
		{
			reason: "an unknown plugin kind lists the known ones",
			yaml:   "plugins:\n  quota: {enabled: all}\n",
			want:   []string{"host.yaml: plugins.quota: unknown plugin kind; this host knows noconfig, quotas"},
		},
		{
			reason: "an enabled value that is not one of the three words",
			yaml:   "plugins:\n  quotas: {enabled: always}\n",
			want:   []string{`host.yaml: plugins.quotas.enabled: want one of all, listed, off, got "always"`},
		},
		{
			reason: "a retention that is neither Retain nor Delete",
			yaml:   "plugins:\n  quotas: {retention: Keep}\n",
			want:   []string{`host.yaml: plugins.quotas.retention: want Retain or Delete, got "Keep"`},
		},
		{
			reason: "a mistyped field says which and what type",
			yaml:   "client: {qps: fast}\nplugins: {quotas: {}}\n",
			want:   []string{"host.yaml: client.qps: cannot use a string as float32"},
		},
		{
			reason: "a resync period that does not parse",
			yaml:   "resyncPeriod: often\nplugins: {quotas: {}}\n",
			want:   []string{"host.yaml: resyncPeriod: want a duration such as 10m"},
		},
		{
			reason: "a burst below the qps",
			yaml:   "client: {qps: 50, burst: 10}\nplugins: {quotas: {}}\n",
			want:   []string{"host.yaml: client.burst: 10 is below client.qps 50"},
		},
		{
			reason: "the upstream controller's lease is refused",
			yaml:   "leaderElection: {id: kubeflow-profile-controller}\nplugins: {quotas: {}}\n",
			want:   []string{`host.yaml: leaderElection.id: "kubeflow-profile-controller" is the upstream profile controller's Lease`},
		},
		{
			reason: "a renew deadline that is not below the lease duration",
			yaml:   "leaderElection: {leaseDuration: 5s, renewDeadline: 5s}\nplugins: {quotas: {}}\n",
			want:   []string{"host.yaml: leaderElection.renewDeadline: 5s is not below leaseDuration 5s"},
		},
		{
			reason: "a retry period that is not below the renew deadline",
			yaml:   "leaderElection: {leaseDuration: 6s, renewDeadline: 4s, retryPeriod: 4s}\nplugins: {quotas: {}}\n",
			want:   []string{"host.yaml: leaderElection.retryPeriod: 4s is not below renewDeadline 4s"},
		},
		{
			reason: "a file that enables nothing would run an idle host",
			yaml:   "plugins:\n  quotas: {enabled: off}\n",
			want:   []string{"host.yaml: plugins: no plugin is enabled"},
		},
		{
			reason: "outside calls need a positive timeout, and re-verification no negative period",
			yaml:   "plugins:\n  quotas: {reverifyPeriod: -1h, outsideTimeout: 0s}\n",
			want: []string{
				"host.yaml: plugins.quotas.reverifyPeriod: must be positive, got -1h0m0s",
				"host.yaml: plugins.quotas.outsideTimeout: must be positive, got 0s",
			},
		},
		{
			reason: "an empty file",
			yaml:   "\n",
			want:   []string{"host.yaml: empty file"},
		},
		{
			reason: "every problem is reported at once, in a stable order",
			yaml:   "resyncPeriod: -1s\nplugins:\n  quotas: {retention: Keep, concurrency: -2}\n  nope: {}\n",
			want: []string{
				"host.yaml: resyncPeriod: must be positive, got -1s",
				"host.yaml: plugins.nope: unknown plugin kind",
				`host.yaml: plugins.quotas.retention: want Retain or Delete, got "Keep"`,
				"host.yaml: plugins.quotas.concurrency: must not be negative, got -2",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			cfg, err := hostconfig.Parse("host.yaml", []byte(tc.yaml), registry(t))
			if err == nil {
				t.Fatalf("Parse succeeded with %+v, want an error", cfg)
			}
			got := err.Error()
			lines := strings.Split(got, "\n")
			for i, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("error does not contain %q:\n%s", w, got)
				}
				// Each wanted fragment that starts an error starts its own line,
				// in the order given.
				if strings.HasPrefix(w, "host.yaml: ") && len(tc.want) > 1 && (i >= len(lines) || !strings.HasPrefix(lines[i], w)) {
					t.Errorf("line %d: want prefix %q, got:\n%s", i, w, got)
				}
			}
			var fe *hostconfig.FieldError
			if !errors.As(err, &fe) || fe.File != "host.yaml" {
				t.Errorf("error is not a FieldError naming the file: %#v", err)
			}
		})
	}
}

func TestParseValid(t *testing.T) {
	yaml := `
resyncPeriod: 2m
shardSelector: {matchLabels: {shard: a}}
client: {qps: 300}
leaderElection: {namespace: profilekit-system, leaseDuration: 6s, renewDeadline: 4s, retryPeriod: 1s}
webhook: {enabled: true, certificates: selfSigned, selfSigned: {secretNamespace: certs, dnsNames: [profilekit-webhook.certs.svc]}}
plugins:
  quotas:
    enabled: all
    selector:
      matchExpressions:
      - {key: profilekit.dev/quotas, operator: NotIn, values: ["off"]}
    retention: Delete
    defaults:
      hard: {limits.cpu: "8"}
  noconfig:
    enabled: off
`
	cfg, err := hostconfig.Parse("host.yaml", []byte(yaml), registry(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Resync(); got != 2*time.Minute {
		t.Errorf("resync = %s, want 2m", got)
	}
	want := hostconfig.Client{QPS: 300, Burst: 300, MaxInFlight: hostconfig.DefaultMaxInFlight}
	if diff := cmp.Diff(want, cfg.Client); diff != "" {
		t.Errorf("client: burst follows a qps above the default burst (-want +got):\n%s", diff)
	}
	if cfg.LeaderElection.ID != hostconfig.DefaultLeaderElectionID || cfg.LeaderElection.Namespace != "profilekit-system" {
		t.Errorf("leader election = %+v", cfg.LeaderElection)
	}
	if lease, renew, retry := cfg.LeaderElection.Timings(); lease != 6*time.Second || renew != 4*time.Second || retry != time.Second {
		t.Errorf("lease timings = %s, %s, %s; want the short lease of the file, 6s, 4s, 1s", lease, renew, retry)
	}
	if diff := cmp.Diff([]string{"quotas"}, cfg.Enabled()); diff != "" {
		t.Errorf("enabled: an unquoted YAML off turns a plugin off (-want +got):\n%s", diff)
	}
	sec, on := cfg.Section("quotas")
	if !on || sec.Retention != plugins.RetentionDelete || sec.Concurrency != hostconfig.DefaultConcurrency {
		t.Errorf("quotas section = %+v, on=%v", sec, on)
	}
	if !cfg.InShard(map[string]string{"shard": "a"}) || cfg.InShard(map[string]string{"shard": "b"}) {
		t.Error("shard selector does not select by the shard label")
	}
	if diff := cmp.Diff([]string{"profilekit-system", "certs"}, cfg.UnshardedNamespaces()); diff != "" {
		t.Errorf("unsharded namespaces: the records' and the webhook Secret's (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		listed bool
		labels map[string]string
		want   bool
	}{
		{listed: false, labels: nil, want: true},
		{listed: false, labels: map[string]string{"profilekit.dev/quotas": "off"}, want: false},
		{listed: true, labels: map[string]string{"profilekit.dev/quotas": "off"}, want: true},
	} {
		if got := sec.Applies(tc.listed, tc.labels); got != tc.want {
			t.Errorf("Applies(listed=%v, %v) = %v, want %v", tc.listed, tc.labels, got, tc.want)
		}
	}
	if sel := sec.SelectorOrNil(); sel == nil || sel.Matches(labels.Set{"profilekit.dev/quotas": "off"}) {
		t.Errorf("selector = %v", sel)
	}
}

func TestParseDefaults(t *testing.T) {
	cfg, err := hostconfig.Parse("host.yaml", []byte("plugins:\n  quotas:\n"), registry(t))
	if err != nil {
		t.Fatal(err)
	}
	sec, on := cfg.Section("quotas")
	want := hostconfig.Plugin{Enabled: hostconfig.EnabledListed, Retention: plugins.RetentionRetain, Concurrency: hostconfig.DefaultConcurrency}
	if diff := cmp.Diff(want, sec); !on || diff != "" {
		t.Errorf("an empty section is listed, Retain, default concurrency (on=%v) (-want +got):\n%s", on, diff)
	}
	if cfg.Client.QPS != hostconfig.DefaultQPS || cfg.Client.Burst != hostconfig.DefaultBurst {
		t.Errorf("client = %+v, want the defaults", cfg.Client)
	}
	if cfg.Resync() != hostconfig.DefaultResyncPeriod || cfg.Shard() != nil {
		t.Errorf("resync %s, shard %v", cfg.Resync(), cfg.Shard())
	}
	if _, on := cfg.Section("noconfig"); on {
		t.Error("a plugin without a section runs")
	}
}

func TestParseOutsideSettings(t *testing.T) {
	cfg, err := hostconfig.Parse("host.yaml", []byte("plugins:\n  quotas: {reverifyPeriod: 6h, outsideTimeout: 10s}\n"), registry(t))
	if err != nil {
		t.Fatal(err)
	}
	sec, _ := cfg.Section("quotas")
	if sec.ReverifyPeriod == nil || sec.ReverifyPeriod.Duration != 6*time.Hour || sec.OutsideTimeout == nil || sec.OutsideTimeout.Duration != 10*time.Second {
		t.Errorf("reverifyPeriod %v, outsideTimeout %v; want 6h and 10s", sec.ReverifyPeriod, sec.OutsideTimeout)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("plugins: {quotas: {enabled: sometimes}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := hostconfig.Load(path, registry(t))
	if err == nil || !strings.HasPrefix(err.Error(), path+": plugins.quotas.enabled: ") {
		t.Errorf("error = %v, want it to start with the path and the field", err)
	}
	_, err = hostconfig.Load(filepath.Join(t.TempDir(), "missing.yaml"), registry(t))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: error = %v, want one that wraps os.ErrNotExist", err)
	}
}
