package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	securityapi "istio.io/api/security/v1beta1"
	securityv1beta1 "istio.io/client-go/pkg/apis/security/v1beta1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/reconcilers"
)

// moveoverConfig is the host configuration of one step of the move from the
// upstream controller (docs/moveover.md, "Replacing the upstream profile
// controller"): config/upstream.yaml's core section without a labels file.
func moveoverConfig(t *testing.T, run, leaseID, enabled string, adopt, handOver bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "host.yaml")
	data := fmt.Sprintf(`
resyncPeriod: 1h
shardSelector: {matchLabels: {`+moveoverShard+`: %s}}
leaderElection: {id: %s, namespace: default}
plugins:
  core:
    enabled: %s
    retention: Retain
    defaults:
      userIdHeader: kubeflow-userid
      mesh: sidecar
      adopt: %t
      handOverFinalizer: %t
`, run, leaseID, enabled, adopt, handOver)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// moveoverShard is the Profile label of the move-over test's shard.
const moveoverShard = "moveover.profilekit.dev/run"

// moveoverHost is a host from server.NewManager whose requests a Counter
// counts.
type moveoverHost struct {
	counter *testenv.Counter
	cancel  context.CancelFunc
	done    chan error
}

// startMoveoverHost runs a host with the configuration file cfgPath on cp,
// under the RBAC the chart renders for it.
func startMoveoverHost(t *testing.T, cp *testenv.Env, cfgPath string) *moveoverHost {
	t.Helper()
	cfg, reg := loadHostConfig(t, cfgPath)
	h := &moveoverHost{counter: &testenv.Counter{}, done: make(chan error, 1)}
	mgr, err := server.NewManager(h.counter.Counting(underChartFile(t, cp.Config, cfgPath)), cfg, reg, server.Options{
		MetricsAddr: "0", ProbeAddr: "0", LeaderElection: true, Logger: logr.Discard(), SkipNameValidation: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	h.cancel = cancel
	go func() { h.done <- mgr.Start(ctx) }()
	t.Cleanup(func() { _ = h.stop() })
	return h
}

// stop stops the host gracefully and returns what its manager returned.
func (h *moveoverHost) stop() error {
	if h.cancel == nil {
		return nil
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		return err
	case <-time.After(30 * time.Second):
		return errors.New("host did not stop within 30s")
	}
}

// writes returns the host's mutating requests, whatever the API server
// answered, but those of its leader election: the Lease and the Event that
// says who leads, both in the Lease's namespace.
func (h *moveoverHost) writes() []string {
	return slices.DeleteFunc(h.counter.Mutating(), leaderElection)
}

// landed returns the writes of the host the API server carried out, but
// those of its leader election; refused returns the others, with their
// answers. A write refused with a conflict and sent again is one landed
// write and one refused.
func (h *moveoverHost) landed() (landed, refused []string) {
	return slices.DeleteFunc(h.counter.Landed(), leaderElection), slices.DeleteFunc(h.counter.Refused(), leaderElection)
}

// profileEvents returns the Events recorded about the Profile name, as
// "type reason (action): note", oldest first.
func profileEvents(t *testing.T, c client.Client, name string) []string {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(t.Context(), &list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
		t.Fatalf("list Events: %v", err)
	}
	slices.SortFunc(list.Items, func(a, b eventsv1.Event) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "Profile" && e.Regarding.Name == name {
			out = append(out, fmt.Sprintf("%s %s (%s): %s", e.Type, e.Reason, e.Action, e.Note))
		}
	}
	return out
}

// leaderElection reports whether a request ("VERB /path") is one of the
// host's leader election in the Lease's namespace.
func leaderElection(r string) bool {
	return strings.HasPrefix(r, "POST /api/v1/namespaces/default/events") || strings.Contains(r, "/namespaces/default/leases")
}

// createUpstreamProfile makes a Profile and what the upstream controller
// makes for it, the way it makes them: its finalizer on the Profile, the
// namespace with the owner annotation and the mesh label, the objects with
// upstream's names and values, each with the Profile as controller, written
// by upstream's field manager. It returns the objects.
func createUpstreamProfile(t *testing.T, c client.Client, name, run string, subject rbacv1.Subject) []client.Object {
	t.Helper()
	ctx := t.Context()
	owner := subject.Name
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"moveover.profilekit.dev/run": run}, Finalizers: []string{core.UpstreamFinalizer}},
		Spec: kubeflowv1.ProfileSpec{
			Owner:             subject,
			ResourceQuotaSpec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("4")}},
		},
	}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	ref := metav1.OwnerReference{APIVersion: kubeflowv1.GroupVersion.String(), Kind: "Profile", Name: name, UID: p.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	meta := func(n string, ann map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: n, Namespace: name, Annotations: ann, OwnerReferences: []metav1.OwnerReference{ref}}
	}
	admin := map[string]string{"user": owner, "role": "admin"}
	saBinding := func(n, role string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{
			ObjectMeta: meta(n, nil),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: n, Namespace: name}},
		}
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: name, Annotations: map[string]string{"owner": owner},
			Labels: map[string]string{"istio-injection": "enabled"}, OwnerReferences: []metav1.OwnerReference{ref},
		}},
		&securityv1beta1.AuthorizationPolicy{
			ObjectMeta: meta(core.AuthorizationPolicy, admin),
			Spec:       securityapi.AuthorizationPolicy{Action: securityapi.AuthorizationPolicy_ALLOW, Rules: upstreamRules(name, owner)},
		},
		&corev1.ServiceAccount{ObjectMeta: meta(core.EditorAccount, nil)},
		saBinding(core.EditorAccount, core.ClusterRoleEdit),
		&corev1.ServiceAccount{ObjectMeta: meta(core.ViewerAccount, nil)},
		saBinding(core.ViewerAccount, core.ClusterRoleView),
		&rbacv1.RoleBinding{
			ObjectMeta: meta(core.OwnerRoleBinding, admin),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: core.ClusterRoleAdmin},
			Subjects:   []rbacv1.Subject{p.Spec.Owner},
		},
		&corev1.ResourceQuota{ObjectMeta: meta(core.ResourceQuota, nil), Spec: p.Spec.ResourceQuotaSpec},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o, client.FieldOwner("manager")); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	return objs
}

// userOwner returns the User owner of the Profile name; withAPIGroup says
// whether it names its apiGroup: kubectl-made Profiles and KFAM's
// (self-serve, the dashboard's registration) do not, and the API server
// stores the owner's RoleBinding subject with it all the same.
func userOwner(name string, withAPIGroup bool) rbacv1.Subject {
	subject := rbacv1.Subject{Kind: rbacv1.UserKind, Name: name + "@example.org"}
	if withAPIGroup {
		subject.APIGroup = rbacv1.GroupName
	}
	return subject
}

// upstreamRules returns the rules of the AuthorizationPolicy the upstream
// controller writes into namespace for owner, whatever the owner's kind:
// the owner's name matched against the user-id header.
func upstreamRules(namespace, owner string) []*securityapi.Rule {
	return []*securityapi.Rule{
		{
			When: []*securityapi.Condition{{Key: "request.headers[kubeflow-userid]", Values: []string{owner}}},
			From: []*securityapi.Rule_From{{Source: &securityapi.Source{Principals: []string{core.DefaultIngressPrincipal, core.DefaultPipelinesUIPrincipal}}}},
		},
		{When: []*securityapi.Condition{{Key: "source.namespace", Values: []string{namespace}}}},
		{To: []*securityapi.Rule_To{{Operation: &securityapi.Operation{Paths: []string{"/healthz", "/metrics", "/wait-for-drain"}}}}},
		{
			From: []*securityapi.Rule_From{{Source: &securityapi.Source{Principals: []string{core.DefaultNotebookPrincipal}}}},
			To:   []*securityapi.Rule_To{{Operation: &securityapi.Operation{Methods: []string{"GET"}, Paths: []string{"*/api/kernels"}}}},
		},
	}
}

// requestsByProfile counts writes per Profile: those to its namespace and
// the objects in it, and those to the Profile itself (status, finalizers).
func requestsByProfile(writes, names []string) (objects, profile map[string]int, other []string) {
	objects, profile = map[string]int{}, map[string]int{}
	for _, w := range writes {
		_, path, _ := strings.Cut(w, " ")
		matched := false
		for _, n := range names {
			switch {
			case path == "/api/v1/namespaces/"+n || strings.HasPrefix(path, "/api/v1/namespaces/"+n+"/") || strings.Contains(path, "/namespaces/"+n+"/"):
				objects[n]++
			case path == "/apis/kubeflow.org/v1/profiles/"+n || path == "/apis/kubeflow.org/v1/profiles/"+n+"/status":
				profile[n]++
			default:
				continue
			}
			matched = true
			break
		}
		if !matched {
			other = append(other, w)
		}
	}
	return objects, profile, other
}

// profilekitLeft returns what of profilekit's a Profile still carries: its
// conditions, finalizers and the annotations of its finalizer hand-over.
func profilekitLeft(p *kubeflowv1.Profile) []string {
	var left []string
	for _, c := range p.Status.Conditions {
		if c.Type == plugins.ConditionReady || c.Type == "CoreReady" || c.Type == reconcilers.ConditionFinalizerHandOver {
			left = append(left, "condition "+c.Type)
		}
	}
	for _, f := range p.Finalizers {
		if strings.HasPrefix(f, plugins.FinalizerPrefix) {
			left = append(left, "finalizer "+f)
		}
	}
	for _, a := range []string{reconcilers.AnnotationHandedOver, reconcilers.AnnotationFinalizerReturns} {
		if _, ok := p.Annotations[a]; ok {
			left = append(left, "annotation "+a)
		}
	}
	return left
}

// profileWritesOf returns the writes among writes to the Profile named
// name itself (its status, its metadata).
func profileWritesOf(writes []string, name string) []string {
	return slices.DeleteFunc(slices.Clone(writes), func(w string) bool {
		_, path, _ := strings.Cut(w, " ")
		return path != "/apis/kubeflow.org/v1/profiles/"+name && path != "/apis/kubeflow.org/v1/profiles/"+name+"/status"
	})
}

// profileVersions watches the Profile named name and returns what each of
// its versions held, one line each: who wrote what is not in a request
// count, and a failure that counts too many writes says what they were.
func profileVersions(t *testing.T, cp *testenv.Env, name string) func() []string {
	t.Helper()
	wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(t.Context(), &kubeflowv1.ProfileList{}, client.MatchingFields{"metadata.name": name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	var seen []string
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*kubeflowv1.Profile)
			if !ok {
				continue
			}
			line := fmt.Sprintf("%s %s: finalizers %v", ev.Type, p.ResourceVersion, p.Finalizers)
			for _, c := range p.Status.Conditions {
				line += fmt.Sprintf("; %s=%s %s", c.Type, c.Status, plugins.BoundMessage(c.Message))
			}
			mu.Lock()
			seen = append(seen, line)
			mu.Unlock()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}
