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
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
	// unlisted, while set, fails the passes' lists of copies; unread,
	// their reads of sources.
	unlisted, unread *atomic.Bool
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
	unlisted, unread := &atomic.Bool{}, &atomic.Bool{}
	def := replicate.Definition()
	inner := def.Plugin
	def.Plugin = plugins.Funcs{
		KindName: replicate.Kind,
		ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
			a.mu.Lock()
			a.n[req.Profile.Name]++
			a.mu.Unlock()
			if unlisted.Load() {
				req.Client = unlistedCopies{req.Client}
			}
			if unread.Load() {
				req.Watched = unreadSources{req.WatchedReader()}
			}
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
	return &host{Host: h, applies: a, requests: reqs, unlisted: unlisted, unread: unread}
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
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &s) //nolint:forbidigo // no *testing.T in reach
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
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "1 object in sync")

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
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), p) }) //nolint:forbidigo // cleanups run after t.Context is canceled

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
		if err := env.Client.List(t.Context(), &list); err != nil {
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
