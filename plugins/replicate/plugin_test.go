package replicate_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/replicate"
	"github.com/profilekit/profilekit/reconcilers"
)

var env *testenv.Env

// logs holds every log line the hosts of this package write, at every
// verbosity; values holds every secret value the tests create. TestMain
// fails the package when a value shows up in a log line.
var (
	logs   syncBuffer
	values struct {
		sync.Mutex
		list []string
	}
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(&logs), zap.Level(zapcore.Level(-10))))
	e, err := testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		os.Exit(1)
	}
	env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stop: %v\n", err)
	}
	if c := checkLogs(); code == 0 {
		code = c
	}
	os.Exit(code)
}

// checkLogs writes the captured log to $REPLICATE_TEST_LOG when set, and
// fails when any secret value appears in it: as it is, in pieces (the
// Kubernetes client dumps protobuf bodies 16 bytes a line), or base64-encoded
// (JSON bodies).
func checkLogs() int {
	out := logs.String()
	if path := os.Getenv("REPLICATE_TEST_LOG"); path != "" {
		_ = os.WriteFile(path, []byte(out), 0o600)
	}
	values.Lock()
	defer values.Unlock()
	text := out
	for _, tok := range base64Token.FindAllString(out, -1) {
		if b, err := base64.StdEncoding.DecodeString(tok); err == nil {
			text += "\n" + string(b)
		}
	}
	lines := strings.Count(out, "\n")
	for _, v := range values.list {
		for i := 0; i+8 <= len(v); i++ {
			if strings.Contains(text, v[i:i+8]) {
				fmt.Fprintf(os.Stderr, "FAIL: a piece of a secret value (%q) appears in the hosts' log (%d lines)\n", v[i:i+8], lines)
				return 1
			}
		}
	}
	fmt.Fprintf(os.Stderr, "replicate: %d log lines captured at every verbosity; none holds any piece of the %d secret values, plain or base64\n", lines, len(values.list))
	return 0
}

var base64Token = regexp.MustCompile(`[A-Za-z0-9+/]{12,}={0,2}`)

// secretValue returns a fresh value that TestMain looks for in the logs.
func secretValue() string {
	v := "s3cr3t-" + rand.String(12)
	values.Lock()
	values.list = append(values.list, v)
	values.Unlock()
	return v
}

const condType = "ReplicateReady"

// applies counts Apply calls per Profile.
type applies struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *applies) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n = map[string]int{}
}

func (a *applies) snapshot() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int, len(a.n))
	for k, v := range a.n {
		out[k] = v
	}
	return out
}

// requests records the requests on secrets and configmaps, with their query.
type requests struct {
	mu   sync.Mutex
	list []string
}

func (r *requests) wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTrip(func(req *http.Request) (*http.Response, error) {
			if strings.Contains(req.URL.Path, "/secrets") {
				r.mu.Lock()
				r.list = append(r.list, req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery)
				r.mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	})
	return out
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type host struct {
	*testhost.Host
	applies  *applies
	requests *requests
}

// start runs the plugin for every Profile labelled run=<run>, with cfg as
// the host's defaults.
func start(t *testing.T, run string, cfg *replicate.Config, resync time.Duration) *host {
	t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := &applies{n: map[string]int{}}
	def := replicate.Definition()
	inner := def.Plugin
	def.Plugin = plugins.Funcs{
		KindName: replicate.Kind,
		ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
			a.mu.Lock()
			a.n[req.Profile.Name]++
			a.mu.Unlock()
			return inner.Apply(ctx, req)
		},
		RevokeFunc: inner.Revoke,
	}
	reqs := &requests{}
	e := *env
	e.Config = reqs.wrap(env.Config)
	h := testhost.Start(t, &e, testhost.Plugin{Def: def, Options: []reconcilers.Option{
		reconcilers.WithDefaults(raw),
		reconcilers.WithEnabledForAll(labels.SelectorFromSet(labels.Set{"run": run})),
		reconcilers.WithResync(resync),
	}})
	return &host{Host: h, applies: a, requests: reqs}
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

func createSecret(t *testing.T, ns, name string, lbls map[string]string, data map[string]string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}, StringData: data}
	if err := env.Client.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

func setSecretData(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	var s corev1.Secret
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
		t.Fatal(err)
	}
	s.Data = nil
	s.StringData = data
	if err := env.Client.Update(t.Context(), &s); err != nil {
		t.Fatal(err)
	}
}

func getSecret(ns, name string) (*corev1.Secret, error) {
	var s corev1.Secret
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &s)
	return &s, err
}

// waitCopy waits until ns/name holds data exactly.
func waitCopy(t *testing.T, ns, name string, data map[string]string) *corev1.Secret {
	t.Helper()
	var got *corev1.Secret
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		s, err := getSecret(ns, name)
		if err != nil {
			return false, err.Error()
		}
		got = s
		return sameData(s.Data, data), fmt.Sprintf("copy %s/%s has keys %v", ns, name, keysOf(s.Data))
	})
	return got
}

func sameData(got map[string][]byte, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if string(got[k]) != v {
			return false
		}
	}
	return true
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func nameSource(id, ns, name string) replicate.Source {
	return replicate.Source{ID: id, Kind: replicate.KindSecret, Namespace: ns, Name: name}
}

// TestRotationOver200Profiles copies a pull secret into 200 Profiles, rotates
// it, and measures the time from the change to the last copy and who was
// reconciled. 20 more Profiles that the host serves but that do not get the
// source must not be reconciled at all. The host's requests on secrets show
// that it reads none outside the source namespace but its own copies.
func TestRotationOver200Profiles(t *testing.T) {
	const carrying, others = 200, 20
	run := "rot-" + rand.String(5)
	src := "src-" + run
	createNamespace(t, src)
	createNamespace(t, "other-"+run)
	v1 := secretValue()
	createSecret(t, src, "regcred", nil, map[string]string{".dockerconfigjson": `{"auths":{"r.example.org":{"auth":"` + v1 + `"}}}`})
	// Neither of these may reach the host.
	createSecret(t, src, "unrelated", nil, map[string]string{"token": secretValue()})
	createSecret(t, "other-"+run, "regcred", nil, map[string]string{"token": secretValue()})

	cfg := replicate.NewConfig()
	pull := nameSource("pull", src, "regcred")
	pull.ProfileSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pull": "yes"}}
	cfg.Sources = []replicate.Source{pull}
	h := start(t, run, cfg, reconcilers.DefaultResync)

	var names []string
	start := time.Now()
	for i := range carrying + others {
		name := fmt.Sprintf("%s-%03d", run, i)
		lbls := map[string]string{"run": run}
		if i < carrying {
			lbls["pull"] = "yes"
			names = append(names, name)
		}
		testhost.NewProfile(t, env.Client, name, lbls)
	}
	want := map[string]string{".dockerconfigjson": `{"auths":{"r.example.org":{"auth":"` + v1 + `"}}}`}
	waitAll(t, run, names, want, 120*time.Second)
	t.Logf("first copies in %d Profiles within %s of the first Profile's creation", carrying, time.Since(start).Round(time.Millisecond))

	t.Run("copies are ours", func(t *testing.T) {
		s, _ := getSecret(names[0], "regcred")
		if !plugins.IsOwnedBy(s.Labels, replicate.Kind, names[0]) || len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Profile" {
			t.Errorf("copy labels %v, owner references %+v: want ours and one to the Profile", s.Labels, s.OwnerReferences)
		}
		if s.Annotations[replicate.AnnotationSource] != "pull" || s.Annotations[replicate.AnnotationFrom] != src+"/regcred" {
			t.Errorf("copy annotations %v: want the source named", s.Annotations)
		}
		if _, err := getSecret(fmt.Sprintf("%s-%03d", run, carrying), "regcred"); !apierrors.IsNotFound(err) {
			t.Errorf("a Profile without pull=yes got a copy (err %v)", err)
		}
	})

	// Let the passes the creations started settle before counting.
	time.Sleep(2 * time.Second)
	t.Run("a change to the source that leaves the copies as they are sends no mutating request", func(t *testing.T) {
		h.Counter.Reset()
		h.applies.reset()
		var s corev1.Secret
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: src, Name: "regcred"}, &s); err != nil {
			t.Fatal(err)
		}
		metav1.SetMetaDataAnnotation(&s.ObjectMeta, "touched", "1")
		if err := env.Client.Update(t.Context(), &s); err != nil {
			t.Fatal(err)
		}
		testhost.Eventually(t, 60*time.Second, func() (bool, string) {
			n := len(h.applies.snapshot())
			return n >= carrying, fmt.Sprintf("%d of %d Profiles passed", n, carrying)
		})
		time.Sleep(time.Second)
		if got := h.Counter.Mutating("/secrets"); len(got) != 0 {
			t.Errorf("mutating requests on secrets after a no-op source change over %d Profiles: %d, want 0: %v", carrying, len(got), got[:min(len(got), 5)])
		}
		t.Logf("no-op source change: %d Profiles passed, %d mutating requests on secrets", len(h.applies.snapshot()), len(h.Counter.Mutating("/secrets")))
	})

	t.Run("rotation reaches every copy and reconciles only the Profiles that get it", func(t *testing.T) {
		time.Sleep(time.Second)
		h.applies.reset()
		h.Counter.Reset()
		reconcilesBefore := testhost.Reconciles(t, replicate.Kind)
		v2 := secretValue()
		rotated := map[string]string{".dockerconfigjson": `{"auths":{"r.example.org":{"auth":"` + v2 + `"}}}`}
		changed := time.Now()
		setSecretData(t, src, "regcred", rotated)
		last := waitAll(t, run, names, rotated, 60*time.Second)
		took := last.Sub(changed)
		time.Sleep(time.Second) // let the passes woken by the copies' own updates finish
		counts := h.applies.snapshot()
		total := 0
		for name, n := range counts {
			total += n
			if !slices.Contains(names, name) {
				t.Errorf("Profile %s, which does not get the source, was reconciled %d times", name, n)
			}
		}
		if len(counts) != carrying {
			t.Errorf("%d Profiles reconciled, want %d", len(counts), carrying)
		}
		patches := h.Counter.Mutating("/secrets")
		t.Logf("rotation: last of %d copies updated %s after the change; %d Apply passes over %d Profiles (controller reconciles: %v); %d mutating requests on secrets",
			carrying, took.Round(time.Millisecond), total, len(counts), testhost.Reconciles(t, replicate.Kind)-reconcilesBefore, len(patches))
		if len(patches) < carrying {
			t.Errorf("mutating requests on secrets = %d, want at least one per copy (%d)", len(patches), carrying)
		}
	})

	t.Run("the host reads no secret outside the source namespace but its own copies", func(t *testing.T) {
		h.requests.mu.Lock()
		reqs := slices.Clone(h.requests.list)
		h.requests.mu.Unlock()
		kinds := map[string]int{}
		for _, r := range reqs {
			verb, rest, _ := strings.Cut(r, " ")
			path, query, _ := strings.Cut(rest, "?")
			switch {
			case strings.HasPrefix(path, "/api/v1/namespaces/"+src+"/secrets"):
				if !strings.Contains(query, "fieldSelector=metadata.name%3Dregcred") {
					t.Errorf("request on the source namespace without the source's name: %s", r)
				}
				kinds["source namespace, by name "+verb]++
			case path == "/api/v1/secrets":
				if !strings.Contains(query, "labelSelector=app.kubernetes.io%2Fmanaged-by%3Dprofilekit") {
					t.Errorf("cluster-wide request on secrets without profilekit's label: %s", r)
				}
				kinds["cluster-wide, profilekit's label only "+verb]++
			case strings.HasPrefix(path, "/api/v1/namespaces/"+run+"-") && strings.HasSuffix(path, "/secrets/regcred"):
				kinds["a copy in a Profile's namespace "+verb]++
			default:
				t.Errorf("request on secrets outside the source and the copies: %s", r)
			}
		}
		t.Logf("requests on secrets by the host: %v", kinds)

		var list corev1.SecretList
		if err := h.Manager.GetCache().List(t.Context(), &list); err != nil {
			t.Fatal(err)
		}
		for _, s := range list.Items {
			if s.Labels[plugins.LabelManagedBy] != plugins.ManagedByValue {
				t.Errorf("the manager's cache holds %s/%s, which is not ours", s.Namespace, s.Name)
			}
		}
		t.Logf("the manager's cache holds %d Secrets, all profilekit's copies", len(list.Items))
	})
}

// waitAll waits until every Profile's copy holds want and returns when the
// last copy was seen changed.
func waitAll(t *testing.T, run string, names []string, want map[string]string, timeout time.Duration) time.Time {
	t.Helper()
	var last time.Time
	done := map[string]bool{}
	testhost.Eventually(t, timeout, func() (bool, string) {
		var list corev1.SecretList
		if err := env.Client.List(context.Background(), &list, client.MatchingLabels{plugins.LabelPlugin: replicate.Kind}); err != nil {
			return false, err.Error()
		}
		for _, s := range list.Items {
			if strings.HasPrefix(s.Namespace, run+"-") && s.Name == "regcred" && !done[s.Namespace] && sameData(s.Data, want) {
				done[s.Namespace] = true
				last = time.Now()
			}
		}
		return len(done) == len(names), fmt.Sprintf("%d of %d copies up to date", len(done), len(names))
	})
	return last
}

func TestHandEditDeleteAndResync(t *testing.T) {
	run := "edit-" + rand.String(5)
	src := "src-" + run
	createNamespace(t, src)
	v := secretValue()
	createSecret(t, src, "regcred", nil, map[string]string{"token": v, "ca.crt": "PEM"})
	cfg := replicate.NewConfig()
	s := nameSource("pull", src, "regcred")
	s.CopyName = "pull"
	s.Keys = []replicate.Key{{Key: "token", As: "password"}}
	cfg.Sources = []replicate.Source{s}
	h := start(t, run, cfg, 300*time.Millisecond)
	name := run + "-a"
	testhost.NewProfile(t, env.Client, name, map[string]string{"run": run})
	want := map[string]string{"password": v}
	waitCopy(t, name, "pull", want)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "1 objects in sync")

	t.Run("a second pass sends no mutating request", func(t *testing.T) {
		if got := h.ResyncWrites(t, 3, replicate.Kind); len(got) != 0 {
			t.Errorf("mutating requests on resync = %v, want none", got)
		}
	})

	t.Run("a hand edit is put back", func(t *testing.T) {
		c, _ := getSecret(name, "pull")
		c.Data["password"] = []byte("edited-by-hand")
		if err := env.Client.Update(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		waitCopy(t, name, "pull", want)
	})

	t.Run("a deleted copy comes back", func(t *testing.T) {
		old, _ := getSecret(name, "pull")
		if err := env.Client.Delete(t.Context(), old); err != nil {
			t.Fatal(err)
		}
		got := waitCopy(t, name, "pull", want)
		if got.UID == old.UID {
			t.Error("still the old copy")
		}
	})
}

func TestUnmanagedObjectIsNeverOverwritten(t *testing.T) {
	run := "unmanaged-" + rand.String(5)
	src := "src-" + run
	createNamespace(t, src)
	createSecret(t, src, "regcred", nil, map[string]string{"token": secretValue()})
	cfg := replicate.NewConfig()
	cfg.Sources = []replicate.Source{nameSource("pull", src, "regcred")}
	start(t, run, cfg, 300*time.Millisecond)

	name := run + "-a"
	createNamespace(t, name)
	theirs := secretValue()
	createSecret(t, name, "regcred", nil, map[string]string{"token": theirs})
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"run": run}},
		Spec: kubeflowv1.ProfileSpec{Owner: testOwner()}}
	if err := env.Client.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), p) })

	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "Conflict")
	if !strings.Contains(cond.Message, "Secret "+name+"/regcred exists and is not managed by plugin replicate") {
		t.Errorf("condition message %q does not name the object", cond.Message)
	}
	time.Sleep(time.Second)
	got, err := getSecret(name, "regcred")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Data["token"]) != theirs || got.Labels[plugins.LabelManagedBy] != "" {
		t.Errorf("the unmanaged Secret was changed: labels %v", got.Labels)
	}
	waitEvent(t, name, plugins.ReasonConflict)
}

func testOwner() rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "owner@example.org"}
}

func waitEvent(t *testing.T, profile, reason string) {
	t.Helper()
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		var list eventsv1.EventList
		if err := env.Client.List(context.Background(), &list); err != nil {
			return false, err.Error()
		}
		for _, e := range list.Items {
			if e.Regarding.Name == profile && e.Reason == reason {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no %s Event for %s", reason, profile)
	})
}

func TestVanishedSource(t *testing.T) {
	run := "gone-" + rand.String(5)
	src := "src-" + run
	createNamespace(t, src)
	v := secretValue()
	createSecret(t, src, "kept", nil, map[string]string{"token": v})
	createSecret(t, src, "dropped", nil, map[string]string{"token": v})
	cfg := replicate.NewConfig()
	dropped := nameSource("dropped", src, "dropped")
	dropped.OnSourceDeleted = replicate.SourceDeletedDelete
	cfg.Sources = []replicate.Source{nameSource("kept", src, "kept"), dropped}
	start(t, run, cfg, 300*time.Millisecond)
	name := run + "-a"
	testhost.NewProfile(t, env.Client, name, map[string]string{"run": run})
	waitCopy(t, name, "kept", map[string]string{"token": v})
	waitCopy(t, name, "dropped", map[string]string{"token": v})

	for _, n := range []string{"kept", "dropped"} {
		s, _ := getSecret(src, n)
		if err := env.Client.Delete(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, replicate.ReasonSourceNotFound)
	for _, w := range []string{"source kept: Secret " + src + "/kept not found, copy kept kept", "source dropped: Secret " + src + "/dropped not found"} {
		if !strings.Contains(cond.Message, w) {
			t.Errorf("condition %q does not say %q", cond.Message, w)
		}
	}
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		_, err := getSecret(name, "dropped")
		return apierrors.IsNotFound(err), fmt.Sprintf("the Delete policy's copy is still there (%v)", err)
	})
	if _, err := getSecret(name, "kept"); err != nil {
		t.Errorf("the Retain policy's copy is gone: %v", err)
	}

	t.Run("a source that comes back is copied again", func(t *testing.T) {
		v2 := secretValue()
		createSecret(t, src, "kept", nil, map[string]string{"token": v2})
		createSecret(t, src, "dropped", nil, map[string]string{"token": v2})
		waitCopy(t, name, "kept", map[string]string{"token": v2})
		waitCopy(t, name, "dropped", map[string]string{"token": v2})
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "2 objects in sync")
	})
}

func TestSelectorSourceAndOptIn(t *testing.T) {
	run := "optin-" + rand.String(5)
	src := "src-" + run
	createNamespace(t, src)
	v := secretValue()
	createSecret(t, src, "store-a", map[string]string{"store": "yes"}, map[string]string{"key": v})
	createSecret(t, src, "not-picked", nil, map[string]string{"key": secretValue()})
	cfg := replicate.NewConfig()
	cfg.Sources = []replicate.Source{{ID: "store", Kind: replicate.KindSecret, Namespace: src,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"store": "yes"}}, CopyPrefix: "s-", OptIn: true}}
	start(t, run, cfg, 300*time.Millisecond)

	in := run + "-in"
	out := run + "-out"
	bad := run + "-bad"
	spec := func(v any) kubeflowv1.Plugin {
		raw, _ := json.Marshal(v)
		return kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: replicate.Kind}, Spec: &runtime.RawExtension{Raw: raw}}
	}
	testhost.NewProfile(t, env.Client, in, map[string]string{"run": run}, spec(map[string]any{"include": []string{"store"}}))
	testhost.NewProfile(t, env.Client, out, map[string]string{"run": run})
	testhost.NewProfile(t, env.Client, bad, map[string]string{"run": run}, spec(map[string]any{"sources": []any{map[string]any{"id": "x", "kind": "Secret", "namespace": "kube-system", "name": "admin-token"}}}))

	waitCopy(t, in, "s-store-a", map[string]string{"key": v})
	testhost.WaitCondition(t, env.Client, out, condType, plugins.ConditionTrue, "0 objects in sync")
	cond := testhost.WaitCondition(t, env.Client, bad, condType, plugins.ConditionFalse, plugins.ReasonInvalidSpec)
	if !strings.Contains(cond.Message, "sources") {
		t.Errorf("condition %q does not name the field", cond.Message)
	}

	t.Run("a new object the selector picks is copied", func(t *testing.T) {
		v2 := secretValue()
		createSecret(t, src, "store-b", map[string]string{"store": "yes"}, map[string]string{"key": v2})
		waitCopy(t, in, "s-store-b", map[string]string{"key": v2})
	})
	t.Run("an object that loses the label keeps its copy and is reported", func(t *testing.T) {
		var s corev1.Secret
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: src, Name: "store-b"}, &s); err != nil {
			t.Fatal(err)
		}
		delete(s.Labels, "store")
		if err := env.Client.Update(t.Context(), &s); err != nil {
			t.Fatal(err)
		}
		testhost.WaitCondition(t, env.Client, in, condType, plugins.ConditionFalse, "source store: Secret "+src+"/store-b not found, copy s-store-b kept")
		if _, err := getSecret(in, "s-store-b"); err != nil {
			t.Errorf("copy is gone: %v", err)
		}
	})
	t.Run("opting out removes the copies", func(t *testing.T) {
		testhost.UpdateProfile(t, env.Client, in, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			_, err := getSecret(in, "s-store-a")
			return apierrors.IsNotFound(err), fmt.Sprintf("copy still there (%v)", err)
		})
	})
	t.Run("no Event and no condition holds a value", func(t *testing.T) {
		var evs eventsv1.EventList
		if err := env.Client.List(t.Context(), &evs); err != nil {
			t.Fatal(err)
		}
		var ps kubeflowv1.ProfileList
		if err := env.Client.List(t.Context(), &ps); err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for _, e := range evs.Items {
			text.WriteString(e.Note + "\n")
		}
		for _, p := range ps.Items {
			for _, c := range p.Status.Conditions {
				text.WriteString(c.Message + "\n")
			}
		}
		values.Lock()
		defer values.Unlock()
		for _, v := range values.list {
			if strings.Contains(text.String(), v) {
				t.Errorf("a secret value appears in an Event or a condition")
			}
		}
		t.Logf("%d Events and %d Profiles' conditions hold none of %d secret values", len(evs.Items), len(ps.Items), len(values.list))
	})
}
