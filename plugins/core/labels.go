package core

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/plugins"
)

// LabelIstioInjection is the label that turns on Istio's sidecar injection.
const LabelIstioInjection = "istio-injection"

// ReadLabelsFile reads a namespace labels file: a YAML map of label keys to
// values, where an empty value means "remove". An empty path is no file. A
// missing or malformed file, or a key or value that is not a valid label, is
// a terminal InvalidConfig error naming the file.
func ReadLabelsFile(path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, plugins.Terminalf(plugins.ReasonInvalidConfig, "namespace labels file: %w", err)
	}
	return ParseLabels(data, path)
}

// ParseLabels parses the contents of a namespace labels file; name names it
// in errors.
func ParseLabels(data []byte, name string) (map[string]string, error) {
	out := map[string]string{}
	if err := yaml.UnmarshalStrict(data, &out); err != nil {
		return nil, plugins.Terminalf(plugins.ReasonInvalidConfig, "namespace labels file %s: want a map of label keys to string values: %w", name, err)
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(out)) {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("key %q: %s", k, strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(out[k]); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s=%q: %s", k, out[k], strings.Join(msgs, "; ")))
		}
		if _, ours := plugins.OwnershipLabels(Kind, "")[k]; ours {
			errs = append(errs, fmt.Errorf("key %q is profilekit's own", k))
		}
	}
	if len(errs) > 0 {
		return nil, plugins.Terminal(plugins.ReasonInvalidConfig, fmt.Errorf("namespace labels file %s: %w", name, errors.Join(errs...)))
	}
	return out, nil
}

// NamespaceLabels returns the labels the core plugin applies to a namespace,
// and the keys it must remove that it does not own alone.
//
// defaults are the labels file's entries over the mesh label; live holds the
// namespace's labels now (nil when it does not exist), and owned the keys
// our apply set before. The rules are the upstream controller's:
//   - a key with a value is added when the namespace does not have it; a
//     value already there is never changed, whoever set it;
//   - a key with an empty value is removed: dropped from our apply, and
//     listed in remove when the namespace still has it, since another writer
//     may hold it too;
//   - a key our apply set that the defaults no longer name stays as it is.
func NamespaceLabels(defaults, live map[string]string, owned []string) (apply map[string]string, remove []string) {
	apply = map[string]string{}
	for _, k := range owned {
		if v, ok := live[k]; ok {
			apply[k] = v
		}
	}
	for _, k := range slices.Sorted(maps.Keys(defaults)) {
		v := defaults[k]
		liveValue, has := live[k]
		switch {
		case v == "":
			delete(apply, k)
			if has {
				remove = append(remove, k)
			}
		case !has:
			apply[k] = v
		case slices.Contains(owned, k):
			apply[k] = liveValue
		}
	}
	return apply, remove
}

// DefaultLabels returns the labels every namespace should get under cfg: the
// mesh label, then the file's entries over it.
func DefaultLabels(cfg *Config, file map[string]string) map[string]string {
	out := map[string]string{}
	if cfg.Mesh == MeshSidecar {
		out[LabelIstioInjection] = "enabled"
	}
	maps.Copy(out, file)
	return out
}

// appliedLabels returns the label keys that manager's apply owns on an
// object, from its managed fields, without profilekit's ownership labels.
func appliedLabels(entries []metav1.ManagedFieldsEntry, manager string) []string {
	var keys []string
	for _, e := range entries {
		if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		var set struct {
			Metadata struct {
				Labels map[string]any `json:"f:labels"`
			} `json:"f:metadata"`
		}
		if err := json.Unmarshal(e.FieldsV1.Raw, &set); err != nil {
			continue
		}
		for k := range set.Metadata.Labels {
			name, ok := strings.CutPrefix(k, "f:")
			if !ok {
				continue
			}
			if _, ours := plugins.OwnershipLabels(Kind, "")[name]; !ours {
				keys = append(keys, name)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// pollEvery is how often watchLabels reads the labels file besides watching it,
// for file systems and mounts whose changes raise no event.
// A variable, so that a test can take the reads out and see the watch alone.
var pollEvery = 10 * time.Second

// watchLabels, the plugin's Runner, watches the namespace labels file named
// in the host config and has every Profile reconciled when its contents
// change (a ConfigMap mount swaps a symlink, so the folder is watched, and the
// contents compared). Without a file it waits for ctx to end. Trouble with
// the file is reported through Apply's errors, never by stopping the host.
func watchLabels(ctx context.Context, rt plugins.Runtime) error {
	changed := rt.EnqueueAll
	cfg, ok := rt.Config.(*Config)
	if !ok || cfg.NamespaceLabelsPath == "" {
		<-ctx.Done()
		return nil
	}
	path := cfg.NamespaceLabelsPath
	logger := log.FromContext(ctx).WithValues("plugin", Kind, "file", path)
	sum := func() [32]byte {
		data, err := os.ReadFile(path)
		if err != nil {
			// A missing file hashes as the empty one would not: the
			// error text stands in, so that its appearance is a change.
			data = append([]byte("error: "), err.Error()...)
		}
		return sha256.Sum256(data)
	}
	last := sum()
	var events <-chan fsnotify.Event
	var watchErrs <-chan error
	if w, err := fsnotify.NewWatcher(); err != nil {
		logger.Error(err, "cannot watch the namespace labels file; reading it every", "period", pollEvery)
	} else {
		defer w.Close()
		if err := w.Add(filepath.Dir(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			logger.Error(err, "cannot watch the namespace labels file's folder; reading it every", "period", pollEvery)
		}
		events, watchErrs = w.Events, w.Errors
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-events:
		case err := <-watchErrs:
			logger.Error(err, "watching the namespace labels file")
		case <-tick.C:
		}
		if now := sum(); !bytes.Equal(now[:], last[:]) {
			last = now
			logger.Info("namespace labels file changed; reconciling every Profile")
			changed()
		}
	}
}
