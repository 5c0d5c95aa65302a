package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/reconcilers"
)

// TestHandLabelUnseenByTheCache: a label someone set by hand that the
// host's cache has not shown yet keeps its value when the labels file
// names it; the plugin looks at the namespace as it is before it adds a
// label.
func TestHandLabelUnseenByTheCache(t *testing.T) {
	run := "unseen-" + rand.String(4)
	labelsFile := filepath.Join(t.TempDir(), "namespace-labels.yaml")
	writeFile(t, labelsFile, "keep: \"1\"\n")
	defaults, _ := json.Marshal(map[string]any{"namespaceLabelsPath": labelsFile, "mesh": core.MeshNone})
	def := core.Definition()
	def.Plugin = hidingLabel{Plugin: def.Plugin, key: "theirs"}
	testhost.Start(t, env, testhost.Plugin{Def: def, Options: []reconcilers.Option{
		reconcilers.WithDefaults(defaults),
		reconcilers.WithEnabledForAll(labels.SelectorFromSet(labels.Set{labelTest: run})),
	}})
	name := "unseen-" + rand.String(4)
	newProfile(t, name, run, "alice@example.org", nil)
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		l := namespaceLabels(t, name)
		return l["keep"] == "1", fmt.Sprintf("labels %v", l)
	})
	var ns corev1.Namespace
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels["theirs"] = "by-hand"
	if err := env.Client.Update(t.Context(), &ns); err != nil {
		t.Fatal(err)
	}

	writeFile(t, labelsFile, "keep: \"1\"\ntheirs: \"from-file\"\nadded: \"3\"\n")
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		l := namespaceLabels(t, name)
		return l["added"] == "3", fmt.Sprintf("labels %v", l)
	})
	if got := namespaceLabels(t, name)["theirs"]; got != "by-hand" {
		t.Errorf("label theirs = %q, want the hand-set %q kept", got, "by-hand")
	}
}

// TestHandEditUnseenByTheCacheSurvivesANamespaceChange: a change of the
// namespace that keeps its labels (a labels file that only removes a key, a
// new owner) sends the namespace's apply, which carries the values of the
// keys the plugin keeps. A value that someone changed by hand, which the
// cache does not show yet, must not be set back to the plugin's: the
// plugin looks at the namespace as it is before any such change.
func TestHandEditUnseenByTheCacheSurvivesANamespaceChange(t *testing.T) {
	cases := []struct {
		reason string
		change func(t *testing.T, p *kubeflowv1.Profile, labelsFile string)
		check  func(t *testing.T, labels, annotations map[string]string)
	}{
		{
			reason: "the labels file only removes a key",
			change: func(t *testing.T, _ *kubeflowv1.Profile, labelsFile string) {
				writeFile(t, labelsFile, "keep: \"1\"\ndrop: \"\"\n")
			},
			check: func(t *testing.T, l, _ map[string]string) {
				if _, has := l["drop"]; has {
					t.Errorf("label drop is still there: %v", l)
				}
			},
		},
		{
			reason: "the Profile gets a new owner",
			change: func(t *testing.T, p *kubeflowv1.Profile, _ string) {
				p.Spec.Owner.Name = "bob@example.org"
				if err := env.Client.Update(t.Context(), p); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, _, a map[string]string) {
				if got := a[core.AnnotationOwner]; got != "bob@example.org" {
					t.Errorf("owner annotation = %q, want the new owner", got)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			ctx := t.Context()
			name := "edit-" + rand.String(5)
			labelsFile := filepath.Join(t.TempDir(), "namespace-labels.yaml")
			writeFile(t, labelsFile, "keep: \"1\"\ndrop: \"2\"\n")
			def := core.Definition()
			// A Profile the API server holds: the namespace's owner reference
			// must name it, or the garbage collector takes the namespace.
			p := &kubeflowv1.Profile{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: "User", Name: "alice@example.org"}},
			}
			if err := env.Client.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), p) }) //nolint:forbidigo // cleanups run after t.Context is canceled
			pass := func(c plugins.Cluster) {
				t.Helper()
				cfg, err := def.Decode([]byte(`{"mesh": "`+core.MeshNone+`", "namespaceLabelsPath": "`+labelsFile+`"}`), p)
				if err != nil {
					t.Fatal(err)
				}
				objects := apply.New(c, def.Kind(), p, def.Owns, append(apply.OptionsFor(def), apply.WithLiveReader(env.Client))...)
				req := plugins.Request{Profile: p, Config: cfg, Client: c, Objects: objects, Live: env.Client}
				if res, err := def.Plugin.Apply(ctx, req); err != nil {
					t.Fatalf("Apply = %s, %v", res.Summary(), err)
				}
			}
			pass(env.Client)
			if l := namespaceLabels(t, name); l["keep"] != "1" || l["drop"] != "2" {
				t.Fatalf("labels after the first pass: %v", l)
			}

			// The cache keeps the namespace as it is now; someone then
			// changes the value of a label the plugin applied.
			before := apply.NewMetadata(corev1.SchemeGroupVersion.WithKind("Namespace"))
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, before); err != nil {
				t.Fatal(err)
			}
			var ns corev1.Namespace
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &ns); err != nil {
				t.Fatal(err)
			}
			ns.Labels["keep"] = "by-hand"
			if err := env.Client.Update(ctx, &ns, client.FieldOwner("kubectl-label")); err != nil {
				t.Fatal(err)
			}

			c.change(t, p, labelsFile)
			pass(behindClient{Client: env.Client, held: before})
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &ns); err != nil {
				t.Fatal(err)
			}
			if ns.Labels["keep"] != "by-hand" {
				t.Errorf("label keep = %q, want the hand-set %q kept", ns.Labels["keep"], "by-hand")
			}
			c.check(t, ns.Labels, ns.Annotations)
		})
	}
}

// behindClient answers reads of the namespace held with its metadata as
// held: a cache that has not shown the changes since.
type behindClient struct {
	client.Client
	held *metav1.PartialObjectMetadata
}

func (c behindClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Client.Get(ctx, key, obj, opts...); err != nil || key.Name != c.held.Name || key.Namespace != "" ||
		obj.GetObjectKind().GroupVersionKind().Kind != "Namespace" {
		return err
	}
	h := c.held
	obj.SetLabels(maps.Clone(h.Labels))
	obj.SetAnnotations(maps.Clone(h.Annotations))
	obj.SetResourceVersion(h.ResourceVersion)
	obj.SetManagedFields(slices.Clone(h.ManagedFields))
	obj.SetOwnerReferences(slices.Clone(h.OwnerReferences))
	return nil
}

// hidingLabel runs a plugin whose reads of namespaces through the cache
// never show the label key, as a cache that has not seen it yet would.
type hidingLabel struct {
	plugins.Plugin
	key string
}

func (h hidingLabel) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	req.Client = hidingClient{Cluster: req.Client, key: h.key}
	return h.Plugin.Apply(ctx, req)
}

type hidingClient struct {
	plugins.Cluster
	key string
}

func (c hidingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Cluster.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if obj.GetObjectKind().GroupVersionKind().Kind == "Namespace" {
		l := maps.Clone(obj.GetLabels())
		delete(l, c.key)
		obj.SetLabels(l)
	}
	return nil
}

// TestNamespaceTheCacheShowsLate: the namespace the plugin took over a
// moment ago shows as ours in the watched namespaces before the client's
// cache, which holds our objects, shows it. That is no failure: a cache
// that catches up within the pass's short wait lets the pass go on; one
// that takes longer makes the pass wait (condition Unknown, reason
// Waiting) and look again. Neither records a Warning Event or a False
// condition.
func TestNamespaceTheCacheShowsLate(t *testing.T) {
	for _, c := range []struct {
		name    string
		hideFor time.Duration
		waits   bool
	}{
		{"within the pass's wait", 300 * time.Millisecond, false},
		{"longer than the pass's wait", 5 * time.Second, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := "late-" + rand.String(4)
			defaults, _ := json.Marshal(map[string]any{"mesh": core.MeshNone})
			def := core.Definition()
			hide := &lateNamespace{Plugin: def.Plugin}
			def.Plugin = hide
			testhost.Start(t, env, testhost.Plugin{Def: def, Options: []reconcilers.Option{
				reconcilers.WithDefaults(defaults),
				reconcilers.WithEnabledForAll(labels.SelectorFromSet(labels.Set{labelTest: run})),
			}})
			name := "late-" + rand.String(4)
			newProfile(t, name, run, "alice@example.org", nil)
			testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

			hide.until.Store(time.Now().Add(c.hideFor).UnixNano())
			testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
				p.Spec.ResourceQuotaSpec.Hard = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
			})
			if c.waits {
				testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionUnknown, "waiting for namespace "+name+" to reach the host's cache")
			}
			var p kubeflowv1.Profile
			testhost.Eventually(t, 30*time.Second, func() (bool, string) {
				if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
					return false, err.Error()
				}
				cond := plugins.FindCondition(p.Status.Conditions, condType)
				return cond != nil && cond.Status == plugins.ConditionTrue && cond.ObservedGeneration == p.Generation, fmt.Sprintf("conditions %v", p.Status.Conditions)
			})
			if hidden := hide.hidden.Load(); hidden == 0 {
				t.Fatal("no pass read the namespace while it was hidden: the test proves nothing")
			}
			for _, e := range testhost.Events(t, env.Client, name) {
				if strings.Contains(e, corev1.EventTypeWarning) {
					t.Errorf("a Warning Event for a cache catching up: %s", e)
				}
			}
		})
	}
}

// lateNamespace runs a plugin whose client's cache does not show the
// Profile's namespace until a time, as a cache that has not caught up
// with a write a moment ago; the watched namespaces show it.
type lateNamespace struct {
	plugins.Plugin
	until  atomic.Int64 // Unix nanoseconds
	hidden atomic.Int64 // reads answered NotFound
}

func (l *lateNamespace) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	req.Client = lateClient{Cluster: req.Client, ns: plugins.Namespace(req.Profile), l: l}
	return l.Plugin.Apply(ctx, req)
}

type lateClient struct {
	plugins.Cluster
	ns string
	l  *lateNamespace
}

func (c lateClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key.Name == c.ns && key.Namespace == "" && time.Now().UnixNano() < c.l.until.Load() {
		c.l.hidden.Add(1)
		return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, key.Name)
	}
	return c.Cluster.Get(ctx, key, obj, opts...)
}
