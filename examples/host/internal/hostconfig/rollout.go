package hostconfig

// This file holds the host's rollout settings: how a change of the plugin
// sections reaches the Profiles (see package rollout), and the staging that
// the rollout hands to the plugins' reconcilers.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilekit/profilekit/reconcilers"
)

// Defaults of the rollout settings.
const (
	DefaultRolloutBatch    = "10%"
	DefaultRolloutMinReady = 30 * time.Second
)

// Rollout says how a change of the plugin sections reaches the Profiles: in
// batches, each Ready for MinReady before the next. Without it the host
// applies a new configuration to every Profile at once.
type Rollout struct {
	// Batch is how many Profiles each batch holds: a count (50) or a share
	// of the Profiles ("5%", rounded up). Default 10%.
	Batch Batch `json:"batch,omitempty"`
	// MinReady is how long every Profile of a batch must be Ready with the
	// new configuration before the next batch starts. Default 30s.
	MinReady *metav1.Duration `json:"minReady,omitempty"`
	// PauseOnFailure stops the rollout when a Profile of a batch fails with
	// the new configuration. Default true.
	PauseOnFailure *bool `json:"pauseOnFailure,omitempty"`
	// ProgressDeadline stops the rollout when a batch is not Ready this long
	// after it started: a Profile whose changed plugin neither succeeds nor
	// fails (a pass that waits, a namespace that never comes) would hold it
	// forever. Default none.
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`
}

// Wait returns MinReady or its default.
func (r *Rollout) Wait() time.Duration {
	if r.MinReady == nil {
		return DefaultRolloutMinReady
	}
	return r.MinReady.Duration
}

// Deadline returns ProgressDeadline, 0 for none.
func (r *Rollout) Deadline() time.Duration {
	if r.ProgressDeadline == nil {
		return 0
	}
	return r.ProgressDeadline.Duration
}

// Pauses returns PauseOnFailure or its default.
func (r *Rollout) Pauses() bool { return r.PauseOnFailure == nil || *r.PauseOnFailure }

// Batch is a batch size: Count Profiles, or Percent of them when Count is 0.
type Batch struct {
	Count   int
	Percent float64
}

// String renders the batch as it is written: 50 or 5%.
func (b Batch) String() string {
	if b.Count > 0 {
		return strconv.Itoa(b.Count)
	}
	return strconv.FormatFloat(b.Percent, 'f', -1, 64) + "%"
}

// IsZero reports an unset batch.
func (b Batch) IsZero() bool { return b.Count == 0 && b.Percent == 0 }

// MarshalJSON writes a count as a number, a share as "5%".
func (b Batch) MarshalJSON() ([]byte, error) {
	if b.Count > 0 {
		return json.Marshal(b.Count)
	}
	return json.Marshal(b.String())
}

// UnmarshalJSON reads a positive count (50 or "50") or a share above 0 and
// at most 100 percent ("5%").
func (b *Batch) UnmarshalJSON(data []byte) error {
	s := string(bytes.TrimSpace(data))
	if unq, err := strconv.Unquote(s); err == nil {
		s = strings.TrimSpace(unq)
	}
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil || f <= 0 || f > 100 {
			return fmt.Errorf("want a share above 0%% and at most 100%%, such as \"5%%\", got %s", data)
		}
		*b = Batch{Percent: f}
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return fmt.Errorf("want a positive count of Profiles (50) or a share (\"5%%\"), got %s", data)
	}
	*b = Batch{Count: n}
	return nil
}

// rawRollout keeps the fields whose decoders lose the field name raw.
type rawRollout struct {
	Batch            json.RawMessage `json:"batch,omitempty"`
	MinReady         json.RawMessage `json:"minReady,omitempty"`
	PauseOnFailure   *bool           `json:"pauseOnFailure,omitempty"`
	ProgressDeadline json.RawMessage `json:"progressDeadline,omitempty"`
}

// rollout validates the rollout section and fills in its defaults.
func (p *parser) rollout(data json.RawMessage) *Rollout {
	if len(data) == 0 || string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	path := field.NewPath("rollout")
	var raw rawRollout
	if !p.decode(path, data, &raw) {
		return nil
	}
	r := &Rollout{PauseOnFailure: raw.PauseOnFailure}
	if len(raw.Batch) > 0 {
		if err := json.Unmarshal(raw.Batch, &r.Batch); err != nil {
			p.fail(path.Child("batch"), err)
		}
	}
	if r.Batch.IsZero() {
		_ = json.Unmarshal([]byte(strconv.Quote(DefaultRolloutBatch)), &r.Batch)
	}
	r.MinReady = p.duration(path.Child("minReady"), raw.MinReady, false)
	r.ProgressDeadline = p.duration(path.Child("progressDeadline"), raw.ProgressDeadline, true)
	return r
}

// Staging is a staged rollout under way: the plugin sections of the last
// configuration every Profile had, and the rollout that chooses between
// them and the file's for each Profile. Package rollout sets it.
type Staging struct {
	// Stable are the plugin sections of the last fully rolled-out
	// configuration.
	Stable map[string]Plugin
	// Chooser serves each Profile with the stable or the file's sections.
	Chooser reconcilers.Staged
}

// Changed returns the kinds whose sections differ between the stable
// configuration and the file's, sorted; a section that is absent on one
// side counts as changed.
func Changed(stable, candidate map[string]Plugin) []string {
	var kinds []string
	for _, k := range slices.Sorted(maps.Keys(mergeKeys(stable, candidate))) {
		a, aok := stable[k]
		b, bok := candidate[k]
		if aok != bok || !sameSection(a, b) {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

func mergeKeys(a, b map[string]Plugin) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func sameSection(a, b Plugin) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errors.Join(errA, errB) == nil && bytes.Equal(ja, jb)
}

// staged reports whether kind's reconciler serves two configurations, and
// the section it is built from: the file's when the file runs it, else the
// stable one.
func (c *Config) staged(kind string) (Plugin, bool) {
	if c.Staging == nil || !slices.Contains(Changed(c.Staging.Stable, c.Plugins), kind) {
		return c.Plugins[kind], false
	}
	if p, ok := c.Plugins[kind]; ok && p.Enabled != EnabledOff {
		return p, true
	}
	return c.Staging.Stable[kind], true
}

// settings returns what a plugin section says of each Profile, for a
// staged reconciler; a missing section serves no Profile.
func settings(p Plugin, ok bool) reconcilers.Settings {
	return reconcilers.Settings{
		Off:           !ok || p.Enabled == EnabledOff,
		EnabledForAll: p.Enabled == EnabledAll,
		Selector:      p.SelectorOrNil(),
		Defaults:      p.Defaults,
		Retention:     p.Retention,
	}
}

// stagedOption returns the reconciler option that serves kind's two
// configurations, or nil when kind is not staged.
func (c *Config) stagedOption(kind string) reconcilers.Option {
	if _, staged := c.staged(kind); !staged {
		return nil
	}
	st, stOK := c.Staging.Stable[kind]
	cand, candOK := c.Plugins[kind]
	return reconcilers.WithStaged(settings(st, stOK), settings(cand, candOK), c.Staging.Chooser)
}
