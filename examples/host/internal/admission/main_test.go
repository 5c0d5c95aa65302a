package admission_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/authpolicy"
	"github.com/profilekit/profilekit/plugins/egress"
	"github.com/profilekit/profilekit/plugins/expose"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/network"
	"github.com/profilekit/profilekit/plugins/notebook"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/plugins/rbac"
)

var env *testenv.Env

// Labels that route a test Profile past the webhooks: bypassLabel=off skips
// admission (so that a test sees the condition the controllers set), and
// policyLabel=Fail sends it to the copy of the webhook with failurePolicy Fail.
const (
	bypassLabel = "test.profilekit.dev/webhook"
	policyLabel = "test.profilekit.dev/failure-policy"
)

func TestMain(m *testing.M) {
	// The hosts the tests start log through controller-runtime's logger;
	// their errors are the expected ones of bad Profiles.
	log.SetLogger(logr.Discard())
	hooks, err := webhookConfigurations()
	if err != nil {
		fmt.Fprintf(os.Stderr, "webhook configuration: %v\n", err)
		os.Exit(1)
	}
	testenv.Main(m, &env, testenv.Options{
		Istio:    true,
		CRDPaths: []string{filepath.Join(testenv.RepoRoot(), "plugins", "notebook", "testdata", "poddefault-crd.yaml")},
		Webhooks: hooks,
	})
}

// webhookConfigurations returns the deployment's ValidatingWebhookConfiguration
// twice: as shipped (failurePolicy Ignore), and with failurePolicy Fail for
// Profiles labelled policyLabel=Fail. Profiles labelled bypassLabel=off skip
// both.
func webhookConfigurations() ([]*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "deploy", "components", "webhook", "validatingwebhookconfiguration.yaml"))
	if err != nil {
		return nil, err
	}
	var shipped admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(data, &shipped); err != nil {
		return nil, err
	}
	if len(shipped.Webhooks) != 1 || shipped.Webhooks[0].ClientConfig.Service == nil {
		return nil, errors.New("want one webhook that calls a Service")
	}
	// envtest puts the path after a slash of its own.
	path := strings.TrimPrefix(*shipped.Webhooks[0].ClientConfig.Service.Path, "/")
	shipped.Webhooks[0].ClientConfig.Service.Path = &path

	ignore := shipped.DeepCopy()
	ignore.Webhooks[0].ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: bypassLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"off"}},
		{Key: policyLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
	}}
	fail := shipped.DeepCopy()
	fail.Name += "-fail"
	policy := admissionregistrationv1.Fail
	fail.Webhooks[0].FailurePolicy = &policy
	fail.Webhooks[0].ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{policyLabel: "Fail"}}
	return []*admissionregistrationv1.ValidatingWebhookConfiguration{ignore, fail}, nil
}

// definitions are the plugins of the example host that these tests run: the
// ones with Profiles and fuzz corpora among the bad inputs. The webhook knows
// no kinds of its own; it checks whatever the registry holds.
func definitions() []plugins.Definition {
	return []plugins.Definition{
		authpolicy.Definition(), egress.Definition(), expose.Definition(), limitrange.Definition(),
		network.Definition(), notebook.Definition(), quotas.Definition(), rbac.Definition(),
	}
}

// hostConfig is the shipped example configuration (every plugin, Istio
// included) with the webhook served where envtest's API server calls it.
// edit changes the configuration's text first.
func hostConfig(t testing.TB, edit func(string) string) (*hostconfig.Config, *plugins.Registry) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "host", "config", "istio.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if edit != nil {
		text = edit(text)
	}
	reg, err := plugins.NewRegistry(definitions()...)
	if err != nil {
		t.Fatal(err)
	}
	// The example enables plugins this test does not build in (their CRDs
	// and outside systems are other tests' business): leave those out.
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	sections, _ := doc["plugins"].(map[string]any)
	for kind := range sections {
		if _, ok := reg.Get(kind); !ok {
			delete(sections, kind)
		}
	}
	w := env.Webhook()
	doc["webhook"] = map[string]any{"enabled": true, "host": w.LocalServingHost, "port": w.LocalServingPort, "certDir": w.LocalServingCertDir}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := hostconfig.Parse("istio.yaml", out, reg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, reg
}

// startHost runs the host (controllers and webhook) until the returned
// function stops it, and waits until the webhook answers.
func startHost(t testing.TB, edit func(string) string) (stop func()) {
	t.Helper()
	cfg, reg := hostConfig(t, edit)
	mgr, err := server.NewManager(env.Config, cfg, reg, server.Options{MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background()) //nolint:forbidigo // no *testing.T in reach
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("host: %v", err)
		}
	}
	t.Cleanup(stop)
	checker := mgr.GetWebhookServer().StartedChecker()
	deadline := time.Now().Add(20 * time.Second)
	for checker(nil) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the webhook server did not start: %v", checker(nil))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return stop
}

// unique returns a Profile name no other test uses.
func unique(prefix string) string { return prefix + "-" + rand.String(5) }

// profileObject reads a Profile from YAML or JSON as kubectl would send it.
func profileObject(t testing.TB, doc []byte) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(doc, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// apply sends u as `kubectl apply --server-side` does, after creating its
// namespace, and deletes both when the test ends.
func apply(t testing.TB, u *unstructured.Unstructured) error {
	t.Helper()
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: u.GetName()}}
	if err := env.Client.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), u.DeepCopy()) //nolint:forbidigo // cleanups run after t.Context is canceled
		_ = env.Client.Delete(context.Background(), ns)           //nolint:forbidigo // cleanups run after t.Context is canceled
	})
	return env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner("kubectl"), client.ForceOwnership)
}

// create creates u with a plain POST, for objects too large for the managed
// fields and annotations an apply adds.
func create(t testing.TB, u *unstructured.Unstructured) error {
	t.Helper()
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: u.GetName()}}
	if err := env.Client.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), u.DeepCopy()) //nolint:forbidigo // cleanups run after t.Context is canceled
		_ = env.Client.Delete(context.Background(), ns)           //nolint:forbidigo // cleanups run after t.Context is canceled
	})
	return env.Client.Create(ctx, u.DeepCopy())
}

// withLabel returns a copy of u with one more label.
func withLabel(u *unstructured.Unstructured, key, value string) *unstructured.Unstructured {
	c := u.DeepCopy()
	l := c.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[key] = value
	c.SetLabels(l)
	return c
}

// refusals waits until the controllers have reported on the Profile (every
// condition set and none Unknown), and returns the False conditions whose
// reason is the Profile's input, as "<type> would be False: <message>".
func refusals(t testing.TB, name string, want int) map[string]string {
	t.Helper()
	var got map[string]string
	var last string
	deadline := time.Now().Add(60 * time.Second)
	for {
		var p kubeflowv1.Profile
		err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p)
		got = map[string]string{}
		for _, c := range p.Status.Conditions {
			// Ready sums the plugins' conditions up; the plugins' own are
			// what the webhook's denial carries.
			if c.Type != plugins.ConditionReady && c.Status == plugins.ConditionFalse && (strings.HasPrefix(c.Message, plugins.ReasonInvalidSpec+":") || strings.HasPrefix(c.Message, plugins.ReasonInvalidLabel+":")) {
				got[c.Type] = c.Type + " would be False: " + c.Message
			}
		}
		if err == nil && len(got) >= want {
			return got
		}
		last = fmt.Sprintf("err %v, conditions %+v", err, p.Status.Conditions)
		if time.Now().After(deadline) {
			t.Fatalf("Profile %s: want %d refusing conditions, have: %s", name, want, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
