package outside

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/profilekit/profilekit/plugins"
)

// RoleDanglingTrust is the LabelRole value of a dangling-trust record.
const RoleDanglingTrust = "dangling-trust"

// ReasonDanglingTrust is the reason of a Profile refused a cloud identity
// because grants to its namespace that profilekit did not make outlived an
// earlier Profile of its name.
const ReasonDanglingTrust = "DanglingTrust"

// danglingKey is the data key of a dangling-trust record: the grants, one
// a line.
const danglingKey = "grants"

// DanglingName returns the name of the ConfigMap, in the records'
// namespace, that lists the grants to namespace that plugin kind found when
// the namespace's Profile went and that it did not make.
func DanglingName(kind, namespace string) string {
	return "profilekit-" + strings.ToLower(kind) + "-dangling-" + namespace
}

// ReportDangling records grants (one description each) that name the
// Profile's namespace and that the plugin did not make, found as the
// Profile goes: they outlive it, and would give the next Profile of the
// name a cloud identity nobody gave it. They are logged, counted
// (profilekit_dangling_trust_total) and kept in a ConfigMap in the records'
// namespace, keyed by the namespace (not the Profile's UID, and with no
// owner, so that it outlives the Profile): while it exists, CheckDangling
// refuses every later Profile of the name. An administrator removes the
// grants, then deletes the ConfigMap.
func (o *Outside) ReportDangling(ctx context.Context, grants []string) error {
	if o.offline || len(grants) == 0 {
		return nil
	}
	grants = slices.Sorted(slices.Values(grants))
	ns := plugins.Namespace(o.profile)
	log.FromContext(ctx).Info("dangling trust: grants to the namespace that profilekit did not make outlive its Profile; the next Profile of the name gets no identity until an administrator removes them",
		"plugin", o.kind, "namespace", ns, "grants", grants)
	danglingTrust.WithLabelValues(o.kind).Add(float64(len(grants)))
	labels := map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: o.kind, plugins.LabelRole: RoleDanglingTrust}
	cm := corev1ac.ConfigMap(DanglingName(o.kind, ns), o.recordNamespace()).
		WithLabels(labels).
		WithData(map[string]string{danglingKey: strings.Join(grants, "\n")})
	if err := o.writer.Apply(ctx, cm, client.FieldOwner(plugins.FieldManagerFor(o.kind)), client.ForceOwnership); err != nil {
		return fmt.Errorf("plugin %s: record dangling trust of namespace %s: %w", o.kind, ns, err)
	}
	o.mu.Lock()
	o.dangled = append(o.dangled, grants...)
	o.mu.Unlock()
	return nil
}

// Dangled returns the grants ReportDangling reported in this pass, for the
// host's Warning Event on the Profile.
func (o *Outside) Dangled() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.dangled)
}

// CheckDangling returns a terminal error with ReasonDanglingTrust when
// ReportDangling recorded grants to the Profile's namespace that outlived
// an earlier Profile of its name, nil otherwise. Once the record is
// deleted, the Profile's next pass (a change, the resync, or
// AnnotationReverify) goes on.
func (o *Outside) CheckDangling(ctx context.Context) error {
	if o.offline {
		return nil
	}
	ns := plugins.Namespace(o.profile)
	var cm corev1.ConfigMap
	err := o.reader.Get(ctx, client.ObjectKey{Namespace: o.recordNamespace(), Name: DanglingName(o.kind, ns)}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("plugin %s: read dangling trust of namespace %s: %w", o.kind, ns, err)
	case cm.Labels[plugins.LabelRole] != RoleDanglingTrust || cm.Labels[plugins.LabelPlugin] != o.kind:
		return nil
	}
	return plugins.Terminalf(ReasonDanglingTrust,
		"ConfigMap %s/%s lists grants to namespace %s that profilekit did not make and that outlived an earlier Profile of this name; no identity is given until an administrator removes them and deletes it: %s",
		cm.Namespace, cm.Name, ns, strings.ReplaceAll(cm.Data[danglingKey], "\n", "; "))
}
