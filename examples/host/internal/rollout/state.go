package rollout

// This file holds the rollout's state, as the ConfigMap in the host's
// namespace keeps it, and the state machine's transitions.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/plugins"
)

// ConfigMapName is the ConfigMap in the host's namespace that holds the
// rollout's state.
const ConfigMapName = "profilekit-rollout"

// The ConfigMap's keys.
const (
	keyStableRevision    = "stableRevision"
	keyStable            = "stable"
	keyCandidateRevision = "candidateRevision"
	keyStarted           = "started"
	keyBatches           = "batches"
	keyFrom              = "from"
	keyTo                = "to"
	keyBatchStarted      = "batchStarted"
	keyPaused            = "paused"
	keyReason            = "reason"
	keySummary           = "summary"
)

// State is where a rollout stands.
type State struct {
	// StableRevision and Stable are the last configuration every Profile
	// had: its plugin sections and their revision.
	StableRevision string
	Stable         map[string]hostconfig.Plugin
	// CandidateRevision is the configuration being rolled out; empty when
	// none is.
	CandidateRevision string
	// Started is when the candidate's rollout began: Profiles created
	// since get it at once.
	Started time.Time
	// Batches is how many batches the candidate has reached; the last one
	// holds the Profiles whose keys are in (From, To], or up to To for the
	// first.
	Batches  int
	From, To uint64
	// BatchStarted is when the last batch started (zero in the state of an
	// earlier version: the batch's age is then counted from the next look).
	BatchStarted time.Time
	// Paused stops the rollout, for Reason, until the configuration
	// changes.
	Paused bool
	Reason string
}

// Revision names a configuration's plugin sections: the same sections give
// the same revision.
func Revision(sections map[string]hostconfig.Plugin) string {
	b, err := json.Marshal(sections)
	if err != nil {
		// Sections decoded from a file marshal; this is never reached.
		return "unmarshalable"
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:5])
}

// Begin returns the state a host starts with, given the state kept (nil on
// a first start) and its configuration's plugin sections:
//   - on a first start the configuration is stable at once;
//   - a configuration equal to the stable one ends any rollout (nothing to
//     do, or a roll back: every Profile gets the stable one again);
//   - the configuration being rolled out continues where it was;
//   - any other configuration starts a rollout from its first batch.
func Begin(kept *State, sections map[string]hostconfig.Plugin, now time.Time) State {
	rev := Revision(sections)
	switch {
	case kept == nil:
		return State{StableRevision: rev, Stable: sections}
	case kept.StableRevision == rev:
		return State{StableRevision: rev, Stable: kept.Stable}
	case kept.CandidateRevision == rev:
		return *kept
	}
	return State{StableRevision: kept.StableRevision, Stable: kept.Stable, CandidateRevision: rev, Started: now}
}

// Active reports whether a rollout is under way.
func (s *State) Active() bool { return s.CandidateRevision != "" }

// Updated reports whether a Profile with this key and creation time gets
// the candidate configuration.
func (s *State) Updated(key uint64, created time.Time) bool {
	if !s.Active() {
		return true
	}
	return !created.Before(s.Started) || s.Batches > 0 && key <= s.To
}

// InBatch reports whether a Profile with this key is in the last batch.
func (s *State) InBatch(key uint64) bool {
	return s.Batches > 0 && key <= s.To && (s.Batches == 1 || key > s.From)
}

// Advance returns the state with the next batch, up to key to, started
// at now.
func (s State) Advance(to uint64, now time.Time) State {
	s.From, s.To = s.To, to
	s.Batches++
	s.BatchStarted = now
	return s
}

// Complete returns the state once every Profile has the candidate: it is
// the stable configuration now.
func (s State) Complete(sections map[string]hostconfig.Plugin) State {
	return State{StableRevision: s.CandidateRevision, Stable: sections}
}

// Pause returns the state stopped for reason.
func (s State) Pause(reason string) State {
	s.Paused, s.Reason = true, reason
	return s
}

// Summary says where the rollout stands in one line, for people.
func (s *State) Summary(updated, pending int) string {
	switch {
	case !s.Active():
		return fmt.Sprintf("revision %s is rolled out to every Profile; no rollout under way", s.StableRevision)
	case s.Paused:
		return fmt.Sprintf("PAUSED at batch %d: revision %s on %d of %d Profiles, stable revision %s on the others; %s",
			s.Batches, s.CandidateRevision, updated, updated+pending, s.StableRevision, s.Reason)
	}
	return fmt.Sprintf("rolling out revision %s: batch %d, %d of %d Profiles updated, %d still on revision %s",
		s.CandidateRevision, s.Batches, updated, updated+pending, pending, s.StableRevision)
}

// encode writes the state into a ConfigMap's data.
func (s *State) encode(cm *corev1.ConfigMap, summary string) error {
	stable, err := json.Marshal(s.Stable)
	if err != nil {
		return fmt.Errorf("encode the stable sections: %w", err)
	}
	cm.Data = map[string]string{
		keyStableRevision: s.StableRevision,
		keyStable:         string(stable),
		keySummary:        summary,
	}
	if s.Active() {
		cm.Data[keyCandidateRevision] = s.CandidateRevision
		cm.Data[keyStarted] = s.Started.UTC().Format(time.RFC3339Nano)
		cm.Data[keyBatches] = strconv.Itoa(s.Batches)
		cm.Data[keyFrom] = strconv.FormatUint(s.From, 16)
		cm.Data[keyTo] = strconv.FormatUint(s.To, 16)
		cm.Data[keyPaused] = strconv.FormatBool(s.Paused)
		if !s.BatchStarted.IsZero() {
			cm.Data[keyBatchStarted] = s.BatchStarted.UTC().Format(time.RFC3339Nano)
		}
		if s.Reason != "" {
			cm.Data[keyReason] = s.Reason
		}
	}
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[plugins.LabelManagedBy] = plugins.ManagedByValue
	return nil
}

// decode reads the state from a ConfigMap's data.
func decode(cm *corev1.ConfigMap) (*State, error) {
	d := cm.Data
	s := &State{StableRevision: d[keyStableRevision], CandidateRevision: d[keyCandidateRevision], Reason: d[keyReason]}
	if err := json.Unmarshal([]byte(d[keyStable]), &s.Stable); err != nil {
		return nil, fmt.Errorf("%s: %w", keyStable, err)
	}
	if s.StableRevision == "" {
		return nil, fmt.Errorf("%s: empty", keyStableRevision)
	}
	if !s.Active() {
		return s, nil
	}
	var err error
	if s.Started, err = time.Parse(time.RFC3339Nano, d[keyStarted]); err != nil {
		return nil, fmt.Errorf("%s: %w", keyStarted, err)
	}
	if s.Batches, err = strconv.Atoi(d[keyBatches]); err != nil {
		return nil, fmt.Errorf("%s: %w", keyBatches, err)
	}
	if s.From, err = strconv.ParseUint(d[keyFrom], 16, 64); err != nil {
		return nil, fmt.Errorf("%s: %w", keyFrom, err)
	}
	if s.To, err = strconv.ParseUint(d[keyTo], 16, 64); err != nil {
		return nil, fmt.Errorf("%s: %w", keyTo, err)
	}
	if s.Paused, err = strconv.ParseBool(d[keyPaused]); err != nil {
		return nil, fmt.Errorf("%s: %w", keyPaused, err)
	}
	if at, ok := d[keyBatchStarted]; ok {
		if s.BatchStarted, err = time.Parse(time.RFC3339Nano, at); err != nil {
			return nil, fmt.Errorf("%s: %w", keyBatchStarted, err)
		}
	}
	return s, nil
}
