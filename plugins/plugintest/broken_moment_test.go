package plugintest_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/plugintest"
)

var roleBindings = schema.GroupVersionKind{Group: rbacv1.GroupName, Version: "v1", Kind: "RoleBinding"}

// widening binds every authenticated user first and then narrows the
// binding to the owner, in one pass: it ends right, and for a moment every
// tenant could edit the namespace.
func widening() plugins.Definition {
	bind := func(ctx context.Context, req plugins.Request, kind, name string) (plugins.Result, error) {
		return req.Objects.Apply(ctx, rbacv1ac.RoleBinding("team", plugins.Namespace(req.Profile)).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName("edit")).
			WithSubjects(rbacv1ac.Subject().WithAPIGroup(rbacv1.GroupName).WithKind(kind).WithName(name)))
	}
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: "widening",
			ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				err := req.Client.Get(ctx, client.ObjectKey{Namespace: plugins.Namespace(req.Profile), Name: "team"}, &rbacv1.RoleBinding{})
				if apierrors.IsNotFound(err) {
					_, err = bind(ctx, req, rbacv1.GroupKind, "system:authenticated")
				}
				if err != nil {
					return plugins.Result{}, err
				}
				return bind(ctx, req, rbacv1.UserKind, req.Profile.Spec.Owner.Name)
			},
			RevokeFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				return req.Objects.DeleteAll(ctx)
			},
		},
		Owns: []schema.GroupVersionKind{roleBindings},
	}
}

// recreating keeps the tenant's data in a ConfigMap and, when its content
// changes, deletes it and makes it again instead of changing it: it ends
// right, and the data was gone for a moment (for a database, for good).
func recreating() plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: "recreating",
			ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				cfg := req.Config.(*size)
				ns := plugins.Namespace(req.Profile)
				var cm corev1.ConfigMap
				err := req.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data"}, &cm)
				switch {
				case err == nil && cm.Data["size"] == cfg.Size:
					return plugins.Result{}, nil
				case err == nil:
					if err := req.Client.Delete(ctx, &cm); client.IgnoreNotFound(err) != nil {
						return plugins.Result{}, err
					}
				case !apierrors.IsNotFound(err):
					return plugins.Result{}, err
				}
				fresh := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data", Labels: maps.Clone(plugins.OwnershipLabels("recreating", req.Profile.Name))},
					Data: map[string]string{"size": cfg.Size}}
				return plugins.Result{}, client.IgnoreAlreadyExists(req.Client.Create(ctx, fresh))
			},
		},
		Owns:      []schema.GroupVersionKind{configMaps},
		NewConfig: func() any { return &size{} },
	}
}

// rebinding binds the owner to edit and, when its spec changes the
// binding's labels, deletes every binding of its own and writes them
// again: it ends right, and for a moment the owner was locked out of the
// namespace.
func rebinding() plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: "rebinding",
			ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				cfg := req.Config.(*size)
				ns := plugins.Namespace(req.Profile)
				var rb rbacv1.RoleBinding
				err := req.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "owner"}, &rb)
				switch {
				case err == nil && rb.Labels["size"] != cfg.Size:
					if _, err := req.Objects.DeleteAll(ctx); err != nil {
						return plugins.Result{}, err
					}
				case client.IgnoreNotFound(err) != nil:
					return plugins.Result{}, err
				}
				return req.Objects.Apply(ctx, rbacv1ac.RoleBinding("owner", ns).WithLabels(map[string]string{"size": cfg.Size}).
					WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName("edit")).
					WithSubjects(rbacv1ac.Subject().WithAPIGroup(rbacv1.GroupName).WithKind(rbacv1.UserKind).WithName(req.Profile.Spec.Owner.Name)))
			},
			RevokeFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				return req.Objects.DeleteAll(ctx)
			},
		},
		Owns:      []schema.GroupVersionKind{roleBindings},
		NewConfig: func() any { return &size{} },
	}
}

// size is the spec of recreating and rebinding.
type size struct {
	Size string `json:"size"`
}

// orphaning makes its object without an owner reference and has no
// finalizer: a deleted Profile leaves the object for good.
func orphaning() plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: "orphaning",
			ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: plugins.Namespace(req.Profile), Name: "data",
					Labels: maps.Clone(plugins.OwnershipLabels("orphaning", req.Profile.Name))}}
				if err := req.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
					return plugins.Result{}, err
				}
				return plugins.Result{}, req.Client.Create(ctx, cm)
			},
		},
		Owns: []schema.GroupVersionKind{configMaps},
	}
}

// sweeping makes its config and, on revoke, deletes every ConfigMap of
// the names it uses, without the proof that they are its own (our
// labels): a tenant's ConfigMap of such a name goes with them.
func sweeping() plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{KindName: "sweeping",
			ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				return req.Objects.Apply(ctx, corev1ac.ConfigMap("config", plugins.Namespace(req.Profile)))
			},
			RevokeFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				for _, name := range []string{"config", "notes"} {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: plugins.Namespace(req.Profile), Name: name}}
					if err := client.IgnoreNotFound(req.Client.Delete(ctx, cm)); err != nil {
						return plugins.Result{}, err
					}
				}
				return plugins.Result{}, nil
			},
		},
		Owns: []schema.GroupVersionKind{configMaps},
	}
}

// tenantNotes makes the tenant's own ConfigMap "notes".
func tenantNotes(ctx context.Context, c client.Client, namespace string) error {
	return c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "notes"}, Data: map[string]string{"todo": "write the thesis"}})
}

// dataUID names the tenant's data ConfigMap by its UID.
func dataUID(ctx context.Context, namespace string) (map[string]string, error) {
	var cm corev1.ConfigMap
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "data"}, &cm)
	if apierrors.IsNotFound(err) {
		return map[string]string{}, nil
	}
	return map[string]string{"data": string(cm.UID)}, err
}

// TestHarnessSeesWhatHoldsOnlyForAMoment: the checks made after every
// write flag a grant wider than either step's and user data made again,
// though both plugins end right; a binding both steps hold that one of them
// deletes and writes again (the owner locked out for a moment); the
// deleted Profile's check flags what
// nothing takes; the safety check, a sweep that deletes a tenant's object
// of a name the plugin uses; and a cache that missed one event makes the
// plugin that decides from it write a copy.
func TestHarnessSeesWhatHoldsOnlyForAMoment(t *testing.T) {
	h := plugintest.Harness{Client: env.Client}
	for _, tt := range []struct {
		name string
		run  func(plugintest.T, plugintest.Scenario) plugintest.Plans
		sc   plugintest.Scenario
		want string
	}{
		{"a grant for a moment", h.CrashAfterEveryWrite, plugintest.Scenario{Def: widening(), Steps: brokenSteps},
			`safety: grant: RoleBinding <profile>/team: ClusterRole edit to {"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"system:authenticated"}`},
		{"data made again", h.StaleAtEveryWrite, plugintest.Scenario{Def: recreating(), Data: dataUID, Steps: []plugintest.Step{
			{Name: "create", Spec: map[string]any{"size": "1"}}, {Name: "grow", Spec: map[string]any{"size": "2"}},
		}}, "safety: user data: data was deleted and made again"},
		{"left behind", h.CrashAfterEveryWrite, plugintest.Scenario{Def: orphaning(), Steps: []plugintest.Step{
			{Name: "create"}, {Name: "delete the Profile", Delete: true},
		}}, "left behind: the deleted Profile's plugin leaves what nothing takes:\n\tConfigMap <profile>/data has no owner reference to the Profile"},
		{"a sweep without proof", h.CrashAfterEveryWrite, plugintest.Scenario{Def: sweeping(), Steps: brokenSteps, Setup: tenantNotes},
			"safety: delete touched ConfigMap <profile>/notes, which neither the step before nor this one holds"},
		{"a lost event", h.UnobservedAtEveryWrite, plugintest.Scenario{Def: renaming(), Steps: brokenSteps},
			"safety: create touched ConfigMap <profile>/data-2"},
		{"protection that drops", h.CrashAfterEveryWrite, plugintest.Scenario{Def: rebinding(), Steps: []plugintest.Step{
			{Name: "create", Spec: map[string]any{"size": "1"}}, {Name: "relabel", Spec: map[string]any{"size": "2"}},
		}}, "safety: protection: RoleBinding <profile>/owner, which the step before and this one hold alike, was gone"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &spy{T: t}
			plans := tt.run(s, tt.sc)
			if plans.Failed == 0 || len(s.errors) == 0 {
				t.Fatalf("plans of %s: %d run, none failed; the harness did not see the bug", tt.sc.Def.Kind(), plans.Run)
			}
			if all := strings.Join(s.errors, "\n"); !strings.Contains(all, tt.want) {
				t.Errorf("no finding says %q:\n%s", tt.want, all)
			}
			t.Logf("%s: %d of %d plans failed; first finding:\n%s", tt.sc.Def.Kind(), plans.Failed, plans.Run, s.errors[0])
		})
	}
}
