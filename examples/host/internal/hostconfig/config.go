// Package hostconfig is the typed configuration of the profilekit host: one
// YAML file with the host's own settings and a section per plugin.
//
// Loading is strict (an unknown or duplicate field is an error) and complete:
// every problem in the file is reported at once, each naming the file, the
// field path and what is wrong, so that a host never starts half-configured.
package hostconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
	"github.com/profilekit/profilekit/reconcilers"
)

// Defaults of the host settings. The client rate limits are far above
// client-go's (5 QPS), which would make a first pass over thousands of
// Profiles take hours.
const (
	DefaultQPS                     = 100
	DefaultBurst                   = 200
	DefaultLeaderElectionID        = "profilekit.profilekit.dev"
	DefaultConcurrency             = reconcilers.DefaultConcurrency
	DefaultMaxInFlight             = reconcilers.DefaultMaxInFlight
	DefaultResyncPeriod            = reconcilers.DefaultResync
	defaultLeaderElectionNamespace = ""
)

// Config is the whole host configuration file.
type Config struct {
	// ResyncPeriod is how often every Profile is reconciled when nothing
	// changed. Default 10m.
	ResyncPeriod *metav1.Duration `json:"resyncPeriod,omitempty"`
	// ShardSelector restricts the host to Profiles whose labels match, so that
	// several hosts can share a cluster. Empty means every Profile.
	ShardSelector *metav1.LabelSelector `json:"shardSelector,omitempty"`
	// Client sets the Kubernetes client's rate limits.
	Client Client `json:"client,omitempty"`
	// LeaderElection names the Lease that keeps one active replica.
	LeaderElection LeaderElection `json:"leaderElection,omitempty"`
	// Plugins holds one section per plugin, keyed by plugin kind. A plugin
	// without a section does not run.
	Plugins map[string]Plugin `json:"plugins,omitempty"`
	// Webhook configures the validating admission webhook for Profiles.
	Webhook Webhook `json:"webhook,omitempty"`
	// Page configures the read-only tenant page.
	Page Page `json:"page,omitempty"`
	// Rollout, when set, brings a change of the plugin sections to the
	// Profiles in batches (see package rollout); unset, to all at once.
	Rollout *Rollout `json:"rollout,omitempty"`

	// Staging is the staged rollout under way, set by package rollout
	// before the reconcilers are made; never read from the file.
	Staging *Staging `json:"-"`
}

// Client holds the Kubernetes client's rate limits.
type Client struct {
	// QPS is the sustained request rate. Default 100.
	QPS float32 `json:"qps,omitempty"`
	// Burst is the short-term request rate. Default 200.
	Burst int `json:"burst,omitempty"`
	// RequestTimeout bounds each request a reconcile sends, so that no
	// Profile can hold a worker. Default 15s.
	RequestTimeout *metav1.Duration `json:"requestTimeout,omitempty"`
	// MaxInFlight is how many requests the plugins' passes have in flight
	// at most, together; the others wait, the newest Profile's first
	// (reconcilers.LimitInFlight). Default 32.
	MaxInFlight int `json:"maxInFlight,omitempty"`
	// PrecedenceWait is how long a pass expected only to confirm what is in
	// sync waits at most while passes with work to do are under way
	// (reconcilers.Precedence). Default 1s; 0s lets every pass go at once.
	PrecedenceWait *metav1.Duration `json:"precedenceWait,omitempty"`
}

// LeaderElection configures the Lease that keeps one active replica.
type LeaderElection struct {
	// ID is the Lease's name. It must differ from the upstream controller's
	// (kubeflow-profile-controller) so that both can run side by side.
	// Default profilekit.profilekit.dev.
	ID string `json:"id,omitempty"`
	// Namespace holds the Lease. Empty means the namespace the host runs in.
	Namespace string `json:"namespace,omitempty"`
	// LeaseDuration is how long a replica waits, after the leader stopped
	// renewing, before it takes the Lease: the longest a crashed leader's
	// Profiles go unserved. Default 15s.
	LeaseDuration *metav1.Duration `json:"leaseDuration,omitempty"`
	// RenewDeadline is how long the leader keeps trying to renew before it
	// gives up leading (and the host exits). Default 10s; below
	// leaseDuration.
	RenewDeadline *metav1.Duration `json:"renewDeadline,omitempty"`
	// RetryPeriod is how often replicas try to take or renew the Lease.
	// Default 2s; below renewDeadline.
	RetryPeriod *metav1.Duration `json:"retryPeriod,omitempty"`
}

// Defaults of the Lease timings, controller-runtime's own.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Timings returns the Lease duration, renew deadline and retry period, or
// their defaults.
func (l LeaderElection) Timings() (lease, renew, retry time.Duration) {
	or := func(d *metav1.Duration, def time.Duration) time.Duration {
		if d == nil {
			return def
		}
		return d.Duration
	}
	return or(l.LeaseDuration, DefaultLeaseDuration), or(l.RenewDeadline, DefaultRenewDeadline), or(l.RetryPeriod, DefaultRetryPeriod)
}

// Plugin is one plugin's section.
type Plugin struct {
	// Enabled says which Profiles the plugin serves: all, listed or off.
	// Default listed.
	Enabled Enablement `json:"enabled,omitempty"`
	// Selector narrows enabled: all to the Profiles whose labels match.
	// Profiles that list the plugin are served whatever their labels.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Retention says what Revoke does with user data: Retain (default) or Delete.
	Retention plugins.Retention `json:"retention,omitempty"`
	// Concurrency is how many Profiles the plugin serves at once. Default 16.
	Concurrency int `json:"concurrency,omitempty"`
	// ReverifyPeriod is how often a plugin with outside state (Azure, a
	// database, cloud IAM) calls out again with nothing changed, to repair
	// drift made by hand; each Profile's period is stretched by up to 10%.
	// Unset or 0 means never; the Profile annotation profilekit.dev/reverify
	// set to a new value asks for it at once.
	ReverifyPeriod *metav1.Duration `json:"reverifyPeriod,omitempty"`
	// OutsideTimeout bounds each call to an outside system. Default 30s.
	OutsideTimeout *metav1.Duration `json:"outsideTimeout,omitempty"`
	// Defaults is the plugin's config for every Profile, under the Profile's
	// own spec.plugins entry. Its fields are the plugin's.
	Defaults json.RawMessage `json:"defaults,omitempty"`
}

// Enablement says which Profiles a plugin serves.
type Enablement string

const (
	// EnabledAll serves every Profile (that matches the section's selector),
	// whether or not it lists the plugin, and every Profile that lists it.
	EnabledAll Enablement = "all"
	// EnabledListed serves only the Profiles that list the plugin in spec.plugins.
	EnabledListed Enablement = "listed"
	// EnabledOff does not run the plugin at all.
	EnabledOff Enablement = "off"
)

// UnmarshalJSON accepts the three words, and YAML's false, which is what an
// unquoted `off` becomes in YAML 1.1.
func (e *Enablement) UnmarshalJSON(data []byte) error {
	if string(data) == "false" {
		*e = EnabledOff
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("want one of all, listed, off, got %s", data)
	}
	switch Enablement(s) {
	case EnabledAll, EnabledListed, EnabledOff:
		*e = Enablement(s)
		return nil
	}
	return fmt.Errorf("want one of all, listed, off, got %q", s)
}

// Resync returns the resync period, or the default.
func (c *Config) Resync() time.Duration {
	if c.ResyncPeriod == nil {
		return DefaultResyncPeriod
	}
	return c.ResyncPeriod.Duration
}

// Shard returns the shard selector; nil selects every Profile. Load has
// checked that it parses.
func (c *Config) Shard() labels.Selector {
	if c.ShardSelector == nil {
		return nil
	}
	s, err := metav1.LabelSelectorAsSelector(c.ShardSelector)
	if err != nil {
		return labels.Nothing()
	}
	return s
}

// UnshardedNamespaces returns the namespaces of the host's own objects
// (outside-state records and ledgers, its webhook's Secret), which a
// sharded host caches whatever their shard labels.
func (c *Config) UnshardedNamespaces() []string {
	namespaces := []string{c.RecordsNamespace()}
	for _, ns := range []string{c.HostNamespace(), c.Webhook.SelfSigned.SecretNamespace} {
		if ns != "" && !slices.Contains(namespaces, ns) {
			namespaces = append(namespaces, ns)
		}
	}
	return namespaces
}

// InShard reports whether a Profile with these labels is this host's.
func (c *Config) InShard(profileLabels map[string]string) bool {
	s := c.Shard()
	return s == nil || s.Matches(labels.Set(profileLabels))
}

// Section returns the section of plugin kind, with defaults filled in, and
// whether the plugin runs: it has a section that does not say off.
func (c *Config) Section(kind string) (Plugin, bool) {
	p, ok := c.Plugins[kind]
	if !ok {
		return Plugin{}, false
	}
	return p, p.Enabled != EnabledOff
}

// Enabled returns the kinds of the plugins that run, sorted: during a
// staged rollout also those that only the stable configuration runs, whose
// Profiles not yet in a batch keep them.
func (c *Config) Enabled() []string {
	var kinds []string
	for _, k := range slices.Sorted(maps.Keys(mergeKeys(c.Plugins, c.stable()))) {
		if p, _ := c.staged(k); p.Enabled != "" && p.Enabled != EnabledOff {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// Off returns the kinds whose section says off and that no configuration
// of a staged rollout runs, sorted: the host takes their conditions off the
// Profiles (reconcilers.WithRetired), and leaves what they made.
func (c *Config) Off() []string {
	var kinds []string
	for _, k := range slices.Sorted(maps.Keys(c.Plugins)) {
		if c.Plugins[k].Enabled == EnabledOff && !slices.Contains(c.Enabled(), k) {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// stable returns the stable sections of a staged rollout, nil without one.
func (c *Config) stable() map[string]Plugin {
	if c.Staging == nil {
		return nil
	}
	return c.Staging.Stable
}

// Precedence returns how long passes that only confirm wait for urgent ones.
func (c Client) Precedence() time.Duration {
	if c.PrecedenceWait == nil {
		return reconcilers.DefaultPrecedenceWait
	}
	return c.PrecedenceWait.Duration
}

// Timeout returns the request timeout, or the default.
func (c Client) Timeout() time.Duration {
	if c.RequestTimeout == nil {
		return reconcilers.DefaultRequestTimeout
	}
	return c.RequestTimeout.Duration
}

// SelectorOrNil returns the section's selector, nil when it has none.
func (p Plugin) SelectorOrNil() labels.Selector {
	if p.Selector == nil {
		return nil
	}
	s, err := metav1.LabelSelectorAsSelector(p.Selector)
	if err != nil {
		return labels.Nothing()
	}
	return s
}

// Applies reports whether a plugin with this section serves a Profile with
// the given labels that does or does not list it. It mirrors the standalone
// reconciler's rule, for offline rendering and the demo's tables.
func (p Plugin) Applies(listed bool, profileLabels map[string]string) bool {
	switch p.Enabled {
	case EnabledOff:
		return false
	case EnabledAll:
		if listed {
			return true
		}
		s := p.SelectorOrNil()
		return s == nil || s.Matches(labels.Set(profileLabels))
	default:
		return listed
	}
}

// serviceAccountNamespace is where a pod finds the namespace it runs in.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// HostNamespace is the namespace the host keeps its own records in: the
// leader election namespace, or the one it runs in; "" out of a cluster
// with no leader election namespace.
func (c *Config) HostNamespace() string {
	if ns := c.LeaderElection.Namespace; ns != "" {
		return ns
	}
	if b, err := os.ReadFile(serviceAccountNamespace); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}

// RecordsNamespace is where the plugins' outside-state records live: the
// host's namespace, or outside.DefaultRecordsNamespace when it has none.
// No tenant may write there.
func (c *Config) RecordsNamespace() string {
	if ns := c.HostNamespace(); ns != "" {
		return ns
	}
	return outside.DefaultRecordsNamespace
}

// ReconcilerOptions returns the options of the plugin's standalone reconciler.
func (c *Config) ReconcilerOptions(kind string) []reconcilers.Option {
	p, _ := c.staged(kind)
	opts := []reconcilers.Option{
		reconcilers.WithResync(c.Resync()),
		reconcilers.WithRequestTimeout(c.Client.Timeout()),
		reconcilers.WithRetention(p.Retention),
		reconcilers.WithConcurrency(p.Concurrency),
	}
	if len(p.Defaults) > 0 {
		opts = append(opts, reconcilers.WithDefaults(p.Defaults))
	}
	var outside outside.Options
	if p.ReverifyPeriod != nil {
		outside.Reverify = p.ReverifyPeriod.Duration
	}
	if p.OutsideTimeout != nil {
		outside.Timeout = p.OutsideTimeout.Duration
	}
	outside.Namespace = c.RecordsNamespace()
	opts = append(opts, reconcilers.WithOutside(outside))
	if s := c.Shard(); s != nil {
		opts = append(opts, reconcilers.WithShard(s))
	}
	if p.Enabled == EnabledAll {
		opts = append(opts, reconcilers.WithEnabledForAll(p.SelectorOrNil()))
	}
	if o := c.stagedOption(kind); o != nil {
		opts = append(opts, o)
	}
	// With core, the host makes the namespaces: the other plugins wait for
	// the Profiles' namespaces that core serves instead of failing into them.
	if core, on := c.Section(plugins.CoreKind); on && kind != plugins.CoreKind {
		opts = append(opts, reconcilers.WithNamespaceGate(func(pr *kubeflowv1.Profile) bool {
			return core.Applies(plugins.Listed(pr, plugins.CoreKind), pr.Labels)
		}))
	}
	return opts
}
