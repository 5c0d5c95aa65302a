package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HeldElsewhere returns the name of another Profile whose record of this
// plugin holds as made a key that match accepts, or "" when none does: a
// piece of shared outside state, such as a cloud identity, that already
// serves another Profile. Keys only intended (EnsureAhead before its call
// succeeded) do not count. It reads the records through the host's reader,
// a cache, in the records' namespace; two Profiles that claim a piece in
// the same moment may both find it free.
func (o *Outside) HeldElsewhere(ctx context.Context, match func(key string) bool) (string, error) {
	if o.offline {
		return "", nil
	}
	var list corev1.ConfigMapList
	err := o.reader.List(ctx, &list, client.InNamespace(o.recordNamespace()),
		client.MatchingLabels{LabelManagedBy: ManagedByValue, LabelPlugin: o.kind, LabelRole: RoleOutsideState})
	if err != nil {
		return "", fmt.Errorf("plugin %s: list outside-state records: %w", o.kind, err)
	}
	own := RecordName(o.kind, o.profile.UID)
	slices.SortFunc(list.Items, func(a, b corev1.ConfigMap) int { return strings.Compare(a.Name, b.Name) })
	for _, cm := range list.Items {
		if cm.Name == own {
			continue
		}
		var entries map[string]outsideEntry
		if json.Unmarshal([]byte(cm.Data[recordKey]), &entries) != nil {
			continue
		}
		for k, e := range entries {
			if e.Hash != "" && match(k) {
				return cm.Labels[LabelProfile], nil
			}
		}
	}
	return "", nil
}
