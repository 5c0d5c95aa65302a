package hostconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/plugins"
)

// upstreamLeaderElectionID is the Lease of the upstream profile controller;
// sharing it would make one of the two controllers stand idle.
const upstreamLeaderElectionID = "kubeflow-profile-controller"

// FieldError is one problem in a configuration file.
type FieldError struct {
	// File is the file's name as the user gave it.
	File string
	// Field is the path of the field, for example plugins.quotas.defaults.
	// Empty when the problem is the file as a whole.
	Field string
	// Err says what is wrong.
	Err error
}

// Error renders the problem as "<file>: <field>: <problem>".
func (e *FieldError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", e.File, e.Field, e.Err)
}

// Unwrap returns the problem.
func (e *FieldError) Unwrap() error { return e.Err }

// Load reads, decodes and validates the configuration file at path against
// the plugins in reg.
func Load(path string, reg *plugins.Registry) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read host config: %w", err)
	}
	return Parse(path, data, reg)
}

// rawConfig mirrors Config with the parts that need their own error paths
// (custom decoders lose the field name) kept raw.
type rawConfig struct {
	ResyncPeriod   json.RawMessage            `json:"resyncPeriod,omitempty"`
	ShardSelector  *metav1.LabelSelector      `json:"shardSelector,omitempty"`
	Client         Client                     `json:"client,omitempty"`
	LeaderElection LeaderElection             `json:"leaderElection,omitempty"`
	Plugins        map[string]json.RawMessage `json:"plugins,omitempty"`
	Webhook        Webhook                    `json:"webhook,omitempty"`
	Page           Page                       `json:"page,omitempty"`
	Rollout        json.RawMessage            `json:"rollout,omitempty"`
}

type rawPlugin struct {
	Enabled        json.RawMessage       `json:"enabled,omitempty"`
	Selector       *metav1.LabelSelector `json:"selector,omitempty"`
	Retention      plugins.Retention     `json:"retention,omitempty"`
	Concurrency    int                   `json:"concurrency,omitempty"`
	ReverifyPeriod json.RawMessage       `json:"reverifyPeriod,omitempty"`
	OutsideTimeout json.RawMessage       `json:"outsideTimeout,omitempty"`
	Defaults       json.RawMessage       `json:"defaults,omitempty"`
}

// Parse decodes and validates a configuration file's content; file names it
// in errors. Every problem is reported, joined, as a *FieldError.
func Parse(file string, data []byte, reg *plugins.Registry) (*Config, error) {
	p := parser{file: file}
	cfg := p.parse(data, reg)
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return cfg, nil
}

type parser struct {
	file string
	errs []error
}

// fail reports err at path, the whole file when path is nil.
func (p *parser) fail(path *field.Path, err error) {
	at := ""
	if path != nil {
		at = path.String()
	}
	p.errs = append(p.errs, &FieldError{File: p.file, Field: at, Err: err})
}

func (p *parser) failf(path *field.Path, format string, args ...any) {
	p.fail(path, fmt.Errorf(format, args...))
}

// decode strictly decodes data into v and reports problems under prefix. It
// reports whether decoding got far enough to validate the result: unknown
// and duplicate fields leave the rest decoded, so that their errors come
// together with the others; a syntax or type error does not.
func (p *parser) decode(prefix *field.Path, data []byte, v any) bool {
	strict, err := sigsjson.UnmarshalStrict(data, v)
	if err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			p.failf(child(prefix, te.Field), "cannot use a %s as %s", te.Value, te.Type)
		} else {
			p.fail(prefix, err)
		}
		return false
	}
	for _, e := range strict {
		msg := e.Error()
		kind, path, found := strings.Cut(msg, ` "`)
		if !found {
			p.fail(prefix, e)
			continue
		}
		p.fail(child(prefix, strings.TrimSuffix(path, `"`)), errors.New(kind))
	}
	return true
}

// child returns the field at the dotted path name under prefix (prefix
// itself when name is empty), as decoding errors name fields.
func child(prefix *field.Path, name string) *field.Path {
	if name == "" {
		return prefix
	}
	names := strings.Split(name, ".")
	if prefix == nil {
		return field.NewPath(names[0], names[1:]...)
	}
	return prefix.Child(names[0], names[1:]...)
}

func (p *parser) parse(data []byte, reg *plugins.Registry) *Config {
	if len(bytes.TrimSpace(data)) == 0 {
		p.fail(nil, errors.New("empty file: at least one plugin section is needed"))
		return nil
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		p.fail(nil, err)
		return nil
	}
	var raw rawConfig
	if !p.decode(nil, js, &raw) {
		return nil
	}
	cfg := &Config{
		ShardSelector:  raw.ShardSelector,
		Client:         raw.Client,
		LeaderElection: raw.LeaderElection,
		Plugins:        map[string]Plugin{},
		Webhook:        raw.Webhook,
		Page:           raw.Page,
	}
	p.host(&raw, cfg)
	cfg.Rollout = p.rollout(raw.Rollout)
	p.webhook(&cfg.Webhook)
	p.page(&cfg.Page)
	for _, kind := range slices.Sorted(maps.Keys(raw.Plugins)) {
		if sec, ok := p.plugin(kind, raw.Plugins[kind], reg); ok {
			cfg.Plugins[kind] = sec
		}
	}
	if len(p.errs) == 0 && len(cfg.Enabled()) == 0 {
		p.failf(field.NewPath("plugins"), "no plugin is enabled, so the host would do nothing; this host knows %s", strings.Join(reg.Kinds(), ", "))
	}
	return cfg
}

// host validates the host's own settings and fills in their defaults.
func (p *parser) host(raw *rawConfig, cfg *Config) {
	if len(raw.ResyncPeriod) > 0 {
		var d metav1.Duration
		if err := json.Unmarshal(raw.ResyncPeriod, &d); err != nil {
			p.failf(field.NewPath("resyncPeriod"), "want a duration such as 10m: %v", err)
		} else if d.Duration <= 0 {
			p.failf(field.NewPath("resyncPeriod"), "must be positive, got %s", d.Duration)
		} else {
			cfg.ResyncPeriod = &d
		}
	}
	if raw.ShardSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(raw.ShardSelector); err != nil {
			p.fail(field.NewPath("shardSelector"), err)
		}
	}
	switch c := &cfg.Client; {
	case c.QPS < 0:
		p.failf(field.NewPath("client", "qps"), "must not be negative, got %g", c.QPS)
	case c.Burst < 0:
		p.failf(field.NewPath("client", "burst"), "must not be negative, got %d", c.Burst)
	default:
		if c.QPS == 0 {
			c.QPS = DefaultQPS
		}
		if c.Burst == 0 {
			c.Burst = max(DefaultBurst, int(c.QPS))
		}
		if float32(c.Burst) < c.QPS {
			p.failf(field.NewPath("client", "burst"), "%d is below client.qps %g; the client could never reach its rate", c.Burst, c.QPS)
		}
	}
	if t := cfg.Client.RequestTimeout; t != nil && t.Duration <= 0 {
		p.failf(field.NewPath("client", "requestTimeout"), "must be positive, got %s", t.Duration)
	}
	if t := cfg.Client.PrecedenceWait; t != nil && t.Duration < 0 {
		p.failf(field.NewPath("client", "precedenceWait"), "must not be negative, got %s", t.Duration)
	}
	switch n := &cfg.Client.MaxInFlight; {
	case *n < 0:
		p.failf(field.NewPath("client", "maxInFlight"), "must not be negative, got %d", *n)
	case *n == 0:
		*n = DefaultMaxInFlight
	}
	le := &cfg.LeaderElection
	if le.ID == "" {
		le.ID = DefaultLeaderElectionID
	}
	if msgs := validation.IsDNS1123Subdomain(le.ID); len(msgs) > 0 {
		p.failf(field.NewPath("leaderElection", "id"), "%q: %s", le.ID, strings.Join(msgs, "; "))
	}
	if le.ID == upstreamLeaderElectionID {
		p.failf(field.NewPath("leaderElection", "id"), "%q is the upstream profile controller's Lease; the two would take turns instead of running side by side", le.ID)
	}
	if le.Namespace != defaultLeaderElectionNamespace {
		if msgs := validation.IsDNS1123Label(le.Namespace); len(msgs) > 0 {
			p.failf(field.NewPath("leaderElection", "namespace"), "%q: %s", le.Namespace, strings.Join(msgs, "; "))
		}
	}
	lease, renew, retry := le.Timings()
	switch {
	case lease <= 0 || renew <= 0 || retry <= 0:
		p.failf(field.NewPath("leaderElection"), "leaseDuration %s, renewDeadline %s and retryPeriod %s must all be positive", lease, renew, retry)
	case renew >= lease:
		p.failf(field.NewPath("leaderElection", "renewDeadline"), "%s is not below leaseDuration %s: a replica could take the Lease while the leader still thinks it leads", renew, lease)
	case retry >= renew:
		p.failf(field.NewPath("leaderElection", "retryPeriod"), "%s is not below renewDeadline %s: the leader would give up before its first retry", retry, renew)
	}
}

// plugin decodes and validates one plugin section, host defaults included.
func (p *parser) plugin(kind string, data json.RawMessage, reg *plugins.Registry) (Plugin, bool) {
	path := field.NewPath("plugins", kind)
	def, known := reg.Get(kind)
	if !known {
		p.failf(path, "unknown plugin kind; this host knows %s", strings.Join(reg.Kinds(), ", "))
		return Plugin{}, false
	}
	var raw rawPlugin
	if string(bytes.TrimSpace(data)) != "null" && !p.decode(path, data, &raw) {
		return Plugin{}, false
	}
	before := len(p.errs)
	sec := Plugin{
		Enabled:     EnabledListed,
		Selector:    raw.Selector,
		Retention:   raw.Retention,
		Concurrency: raw.Concurrency,
		Defaults:    raw.Defaults,
	}
	if len(raw.Enabled) > 0 {
		if err := json.Unmarshal(raw.Enabled, &sec.Enabled); err != nil {
			p.fail(path.Child("enabled"), err)
		}
	}
	if raw.Selector != nil {
		if _, err := metav1.LabelSelectorAsSelector(raw.Selector); err != nil {
			p.fail(path.Child("selector"), err)
		} else if sec.Enabled != EnabledAll {
			p.failf(path.Child("selector"), "only narrows enabled: all, and enabled is %s", sec.Enabled)
		}
	}
	switch sec.Retention {
	case "":
		sec.Retention = plugins.RetentionRetain
	case plugins.RetentionRetain, plugins.RetentionDelete:
	default:
		p.failf(path.Child("retention"), "want %s or %s, got %q", plugins.RetentionRetain, plugins.RetentionDelete, sec.Retention)
	}
	switch {
	case sec.Concurrency < 0:
		p.failf(path.Child("concurrency"), "must not be negative, got %d", sec.Concurrency)
	case sec.Concurrency == 0:
		sec.Concurrency = DefaultConcurrency
	}
	sec.ReverifyPeriod = p.duration(path.Child("reverifyPeriod"), raw.ReverifyPeriod, false)
	sec.OutsideTimeout = p.duration(path.Child("outsideTimeout"), raw.OutsideTimeout, true)
	if string(bytes.TrimSpace(sec.Defaults)) == "null" {
		sec.Defaults = nil
	}
	// Defaults are checked even for a plugin that is off, so that a typo
	// is found before someone turns it on.
	if _, err := def.DecodeHostDefaults(sec.Defaults); err != nil {
		p.fail(path.Child("defaults"), err)
	}
	return sec, len(p.errs) == before
}

// duration decodes an optional duration field; zero is allowed unless
// positive says otherwise, a negative one never.
func (p *parser) duration(at *field.Path, data json.RawMessage, positive bool) *metav1.Duration {
	if len(data) == 0 || string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	var d metav1.Duration
	switch err := json.Unmarshal(data, &d); {
	case err != nil:
		p.failf(at, "want a duration such as 6h: %v", err)
	case d.Duration < 0 || (positive && d.Duration == 0):
		p.failf(at, "must be positive, got %s", d.Duration)
	default:
		return &d
	}
	return nil
}
