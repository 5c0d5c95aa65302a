package outside

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// RoleLedger is the LabelRole value of a Ledger's ConfigMap.
const RoleLedger = "ledger"

// ReasonLedger is the reason of a ledger that cannot be trusted (not ours,
// or not readable as one): nothing it guards is done until it is fixed.
const ReasonLedger = "LedgerUnusable"

// ledgerKey is the ConfigMap data key: a JSON list of the times of the
// actions within the window.
const ledgerKey = "actions.json"

// Ledger is an allowance of destructive actions (deletions) per window that
// holds across restarts and across hosts: every action taken is recorded,
// by time, in a ConfigMap of the plugin's, read from the API server and
// patched with its resourceVersion as a precondition (so a host needs
// create and patch on ConfigMaps there, as for outside-state records). A guard such as "never
// delete more than Max volumes per Window" that counted in memory would start
// from zero after every restart; a Ledger starts from what the cluster holds.
type Ledger struct {
	// Reader reads the record; it should not be a cache, which may not yet
	// hold the last write.
	Reader client.Reader
	// Writer creates and updates the record.
	Writer client.Writer
	// Key is the record's namespace and name.
	Key client.ObjectKey
	// Kind is the plugin that owns the record.
	Kind string
	// Max is how many actions the Window allows.
	Max int
	// Window is the period Max counts over.
	Window time.Duration
	// Now returns the time. Default time.Now.
	Now func() time.Time
}

// TakeAll records n actions now when the window leaves room for all of
// them, and reports whether it did; when it does not, nothing is recorded.
func (l Ledger) TakeAll(ctx context.Context, n int) (bool, error) {
	got, err := l.take(ctx, n, false)
	return got == n, err
}

// TakeUpTo records as many of n actions as the window leaves room for and
// returns how many that is.
func (l Ledger) TakeUpTo(ctx context.Context, n int) (int, error) {
	return l.take(ctx, n, true)
}

// take records up to n actions (partial) or n or none. A record that
// exists without the plugin's labels, or does not decode, or a Key without
// a namespace or a name, is a terminal error and grants nothing: a guard
// errs on the side of doing nothing.
func (l Ledger) take(ctx context.Context, n int, partial bool) (int, error) {
	if n <= 0 {
		return 0, nil
	}
	if l.Key.Namespace == "" || l.Key.Name == "" {
		return 0, plugins.Terminalf(ReasonLedger,
			"the ledger has no namespace or no name (%q/%q); nothing it guards is done until the host names where it lives", l.Key.Namespace, l.Key.Name)
	}
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	granted := 0
	err := retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		granted = 0
		var cm corev1.ConfigMap
		err := l.Reader.Get(ctx, l.Key, &cm)
		exists := err == nil
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("read the ledger %s: %w", l.Key, err)
		}
		if exists && (cm.Labels[plugins.LabelManagedBy] != plugins.ManagedByValue || cm.Labels[plugins.LabelPlugin] != l.Kind) {
			return plugins.Terminalf(plugins.ReasonConflict,
				"ConfigMap %s exists and is not plugin %s's ledger; left untouched, and nothing it guards is done until it is renamed or removed", l.Key, l.Kind)
		}
		t := now().UTC()
		times, err := recentActions(cm.Data[ledgerKey], t.Add(-l.Window))
		if err != nil {
			return plugins.Terminalf(ReasonLedger, "the ledger %s does not decode (%v); nothing it guards is done until it is removed", l.Key, err)
		}
		room := max(l.Max-len(times), 0)
		switch {
		case room >= n:
			granted = n
		case partial:
			granted = room
		}
		if granted == 0 {
			return nil
		}
		for range granted {
			times = append(times, t)
		}
		data, err := json.Marshal(times)
		if err != nil {
			return fmt.Errorf("encode the ledger: %w", err)
		}
		if exists {
			// A patch guarded by the resourceVersion read: two hosts that
			// count at once cannot both take the last of the window.
			patch := client.MergeFromWithOptions(cm.DeepCopy(), client.MergeFromWithOptimisticLock{})
			cm.Data = map[string]string{ledgerKey: string(data)}
			err = l.Writer.Patch(ctx, &cm, patch, client.FieldOwner(plugins.FieldManagerFor(l.Kind)))
		} else {
			labels := map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: l.Kind, plugins.LabelRole: RoleLedger}
			cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: l.Key.Namespace, Name: l.Key.Name, Labels: labels},
				Data: map[string]string{ledgerKey: string(data)}}
			err = l.Writer.Create(ctx, &cm, client.FieldOwner(plugins.FieldManagerFor(l.Kind)))
		}
		if err != nil {
			granted = 0
			return fmt.Errorf("write the ledger %s: %w", l.Key, err)
		}
		return nil
	})
	return granted, err
}

// recentActions decodes a ledger's times and keeps those after cut.
func recentActions(raw string, cut time.Time) ([]time.Time, error) {
	if raw == "" {
		return nil, nil
	}
	var times []time.Time
	if err := json.Unmarshal([]byte(raw), &times); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(times, func(t time.Time) bool { return !t.After(cut) }), nil
}

// ConfigMapRef names a ConfigMap, such as a Ledger's record, in a host's
// configuration.
type ConfigMapRef struct {
	// Namespace of the ConfigMap.
	Namespace string `json:"namespace,omitempty"`
	// Name of the ConfigMap.
	Name string `json:"name,omitempty"`
}

// Validate checks that the names, when set, are a namespace's and a
// ConfigMap's.
func (r ConfigMapRef) Validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Label(r.Namespace); r.Namespace != "" && len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("namespace %q: %s", r.Namespace, strings.Join(msgs, "; ")))
	}
	if msgs := validation.IsDNS1123Subdomain(r.Name); r.Name != "" && len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("name %q: %s", r.Name, strings.Join(msgs, "; ")))
	}
	return errors.Join(errs...)
}
