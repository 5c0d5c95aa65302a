package admission_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins"
)

// hostileSpecs are quotas specs built to hurt: the wrong JSON type, 50,000
// keys the API server would refuse in a ResourceQuota, a value nested 5,000
// levels deep. want are parts of the message each must be refused with.
var hostileSpecs = []struct {
	name, spec string
	want       []string
}{
	{"array", `[1,2,3]`, []string{"QuotasReady would be False: InvalidSpec: spec.plugins[0] (quotas).spec: must be an object, got an array"}},
	{"string", `"hard: {cpu: 1}"`, []string{"QuotasReady would be False: InvalidSpec: spec.plugins[0] (quotas).spec: must be an object, got a string"}},
	{"invalid-keys", invalidKeys(50000), []string{"spec.plugins[0] (quotas).spec: hard[bad_00000]: not a resource a quota can limit", "(and 49995 more problems)"}},
	{"deep-nesting", `{"hard":{"cpu":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000) + `}}`, []string{`spec.plugins[0] (quotas).spec: field "hard[cpu]": {"a":{"a":`, "is not a quantity"}},
}

func invalidKeys(n int) string {
	hard := make(map[string]string, n)
	for i := range n {
		hard[fmt.Sprintf("bad_%05d", i)] = "1"
	}
	b, _ := json.Marshal(map[string]any{"hard": hard})
	return string(b)
}

func hostileProfile(name, spec string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	doc := fmt.Sprintf(`{"apiVersion":"kubeflow.org/v1","kind":"Profile","metadata":{"name":%q},"spec":{"owner":{"kind":"User","name":"eve@example.org"},"plugins":[{"kind":"quotas","spec":%s}]}}`, name, spec)
	if err := json.Unmarshal([]byte(doc), &u.Object); err != nil {
		panic(err)
	}
	return u
}

// badProfiles are the examples' invalid Profiles, a bad gate label of a
// plugin that checks it in Apply (egress), the fuzz corpora's inputs and the
// hostile specs, each with the parts its refusal must hold.
func badProfiles(t *testing.T) []badProfile {
	t.Helper()
	var out []badProfile
	files, _ := filepath.Glob(filepath.Join(testenv.RepoRoot(), "examples", "host", "testdata", "invalid-*.yaml"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		u := profileObject(t, data)
		if u.GetKind() != "Profile" {
			continue // a host configuration
		}
		rel, _ := filepath.Rel(testenv.RepoRoot(), f)
		out = append(out, badProfile{source: rel, obj: u})
	}
	out = append(out, badProfile{source: "egress gate label", obj: profileWith("egress-gate", map[string]string{"egress.profilekit.dev/enabled": "maybe"}, "", nil)})
	corpus, unknown := corpusProfiles(t)
	for _, dir := range unknown {
		t.Logf("no Profile builder for the fuzz corpus %s; its inputs are not checked here", dir)
	}
	if len(corpus) == 0 {
		t.Error("no fuzz corpus inputs found under plugins/*/testdata/fuzz")
	}
	out = append(out, corpus...)
	for _, h := range hostileSpecs {
		out = append(out, badProfile{source: "hostile " + h.name, obj: hostileProfile("hostile-"+h.name, h.spec)})
	}
	return out
}

// TestBadProfilesAreDeniedWithTheConditionsMessage sends every bad Profile
// through the API server with the webhook registered: it is denied. Then the
// same Profile, past the webhook, is stored and reconciled: the message of
// each refusing plugin's condition is in the denial, and they are as many.
func TestBadProfilesAreDeniedWithTheConditionsMessage(t *testing.T) {
	startHost(t, nil)
	for _, bad := range badProfiles(t) {
		t.Run(bad.source, func(t *testing.T) {
			obj := bad.obj.DeepCopy()
			obj.SetName(unique(obj.GetName()))
			if schemaRefuses(bad.obj) {
				// The shipped CRD types a plugin's spec as an object, so the
				// API server refuses these itself and nothing is ever stored;
				// under a CRD that does not (as older upstream ones), the
				// webhook answers, with the message checked here.
				err := create(t, obj)
				if err == nil || !strings.Contains(err.Error(), "spec.plugins[0].spec") || !strings.Contains(err.Error(), "object") {
					t.Errorf("error %v, want the API server to refuse spec.plugins[0].spec as not an object", err)
				}
				resp := review(t, obj)
				for _, h := range hostileSpecs {
					if bad.source == "hostile "+h.name {
						for _, w := range h.want {
							if resp.Allowed || !strings.Contains(resp.Result.Message, w) {
								t.Errorf("webhook answer allowed=%v %q, want it to contain %q", resp.Allowed, resp.Result.Message, w)
							}
						}
					}
				}
				t.Logf("the webhook denies with: %s", resp.Result.Message)
				return
			}
			err := apply(t, obj)
			if err == nil {
				t.Fatalf("Profile %s admitted", obj.GetName())
			}
			denial := err.Error()
			if !strings.Contains(denial, `admission webhook "profiles.profilekit.dev" denied the request`) {
				t.Fatalf("not denied by the webhook: %v", err)
			}
			n := strings.Count(denial, " would be False: ")
			if n == 0 {
				t.Fatalf("the denial names no plugin's condition: %s", denial)
			}
			if limit := n*(plugins.MaxMessageBytes+64) + 200; len(denial) > limit {
				t.Errorf("denial of %d bytes, above %d:\n%s", len(denial), limit, denial)
			}
			for _, h := range hostileSpecs {
				if bad.source == "hostile "+h.name {
					for _, w := range h.want {
						if !strings.Contains(denial, w) {
							t.Errorf("denial does not contain %q:\n%s", w, denial)
						}
					}
				}
			}

			if err := create(t, withLabel(obj, bypassLabel, "off")); err != nil {
				t.Fatalf("create past the webhook: %v", err)
			}
			got := refusals(t, obj.GetName(), n)
			if len(got) != n {
				t.Errorf("the controllers report %d refusing conditions, the webhook %d:\nconditions: %v\ndenial: %s", len(got), n, got, denial)
			}
			for _, line := range got {
				if !strings.Contains(denial, line) {
					t.Errorf("the denial does not carry the condition's message\ncondition: %s\ndenial:    %s", line, denial)
				}
				if len(line) > plugins.MaxMessageBytes+64 {
					t.Errorf("condition of %d bytes:\n%s", len(line), line)
				}
			}
			t.Logf("denied with: %s", firstLine(denial))
		})
	}
}

// schemaRefuses reports whether the Profile's first plugin spec is not an
// object, which the shipped CRD's schema refuses.
func schemaRefuses(u *unstructured.Unstructured) bool {
	plugins, _, _ := unstructured.NestedSlice(u.Object, "spec", "plugins")
	if len(plugins) == 0 {
		return false
	}
	spec, ok := plugins[0].(map[string]any)["spec"]
	if !ok {
		return false
	}
	_, isObject := spec.(map[string]any)
	return !isObject
}

// review sends u to the webhook as the API server would, in an
// AdmissionReview for its CREATE, and returns the answer.
func review(t *testing.T, u *unstructured.Unstructured) *admissionv1.AdmissionResponse {
	t.Helper()
	raw, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "review",
			Kind:      metav1.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "Profile"},
			Resource:  metav1.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "profiles"},
			Name:      u.GetName(),
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := env.Webhook()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(w.LocalServingCAData)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	url := fmt.Sprintf("https://%s/%s", net.JoinHostPort(w.LocalServingHost, strconv.Itoa(w.LocalServingPort)), strings.TrimPrefix(hostconfig.DefaultWebhookPath, "/"))
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil {
		t.Fatalf("webhook answer: %v", err)
	}
	return out.Response
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// TestGoodProfilesAreAdmitted applies the sample Profiles, and one written
// against kubeflow.org/v1beta1.
func TestGoodProfilesAreAdmitted(t *testing.T) {
	startHost(t, nil)
	files, _ := filepath.Glob(filepath.Join(testenv.RepoRoot(), "examples", "profiles", "*.yaml"))
	files = append(files, filepath.Join(testenv.RepoRoot(), "examples", "host", "testdata", "v1beta1-profile.yaml"))
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			obj := profileObject(t, data)
			obj.SetName(unique(obj.GetName()))
			if err := apply(t, obj); err != nil {
				t.Fatalf("%s (%s) denied: %v", f, obj.GetAPIVersion(), err)
			}
		})
	}
}

// TestHostDownAndEditsOfRefusedProfiles runs through the webhook's life:
// with the host down, failurePolicy Ignore admits and Fail denies; after the
// host comes back with a stricter configuration, a Profile it now refuses can
// still have its owner changed, but not be made invalid in a new way.
func TestHostDownAndEditsOfRefusedProfiles(t *testing.T) {
	stop := startHost(t, nil)
	name := unique("edit-me")
	obj := profileWith(name, nil, "quotas", map[string]any{"hard": map[string]string{"limits.cpu": "32"}})
	if err := apply(t, obj); err != nil {
		t.Fatalf("a Profile within the cap denied: %v", err)
	}
	stop()

	t.Run("host down, failurePolicy Ignore admits", func(t *testing.T) {
		bad := profileWith(unique("down-ignore"), nil, "quotas", map[string]any{"hard": map[string]string{"limits.cpu": "999"}})
		if err := apply(t, bad); err != nil {
			t.Errorf("denied while the host is down: %v", err)
		}
	})
	t.Run("host down, failurePolicy Fail denies", func(t *testing.T) {
		good := withLabel(profileWith(unique("down-fail"), nil, "quotas", map[string]any{"hard": map[string]string{"limits.cpu": "1"}}), policyLabel, "Fail")
		err := apply(t, good)
		if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
			t.Errorf("error %v, want the API server to fail the call", err)
		}
	})

	// A stricter host: the Profile above is now over the cap.
	startHost(t, func(s string) string { return strings.Replace(s, `limits.cpu: "64"`, `limits.cpu: "16"`, 1) })
	refused := refusals(t, name, 1)
	if want := "QuotasReady would be False: InvalidSpec: spec.plugins[0] (quotas).spec: hard[limits.cpu]: limits.cpu 32 is above the cap 16"; refused["QuotasReady"] != want {
		t.Fatalf("under the stricter host the Profile reports %v, want %q", refused, want)
	}
	edit := func(mutate func(*unstructured.Unstructured)) error {
		var live kubeflowv1.Profile
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &live); err != nil {
			t.Fatal(err)
		}
		u := obj.DeepCopy()
		mutate(u)
		return env.Client.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("kubectl"), client.ForceOwnership)
	}
	t.Run("an edit of the owner only is admitted", func(t *testing.T) {
		err := edit(func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "new-owner@example.org", "spec", "owner", "name")
		})
		if err != nil {
			t.Errorf("owner change denied: %v", err)
		}
	})
	t.Run("an edit that keeps the same refusal is admitted", func(t *testing.T) {
		err := edit(func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "new-owner@example.org", "spec", "owner", "name")
			u.SetLabels(map[string]string{"team": "a"})
		})
		if err != nil {
			t.Errorf("an unrelated label denied: %v", err)
		}
	})
	t.Run("an edit that makes it invalid in a new way is denied", func(t *testing.T) {
		err := edit(func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "new-owner@example.org", "spec", "owner", "name")
			u.SetLabels(map[string]string{"team": "a"})
			_ = unstructured.SetNestedField(u.Object, []any{map[string]any{"kind": "quotas", "spec": map[string]any{"hard": map[string]any{"limits.cpu": "48"}}}}, "spec", "plugins")
		})
		want := "QuotasReady would be False: InvalidSpec: spec.plugins[0] (quotas).spec: hard[limits.cpu]: limits.cpu 48 is above the cap 16"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	})
	t.Run("an edit that fixes it is admitted", func(t *testing.T) {
		err := edit(func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, []any{map[string]any{"kind": "quotas", "spec": map[string]any{"hard": map[string]any{"limits.cpu": "8"}}}}, "spec", "plugins")
		})
		if err != nil {
			t.Errorf("a fix denied: %v", err)
		}
	})
	t.Run("an unknown plugin kind is admitted with a warning", func(t *testing.T) {
		warnings := &warningRecorder{}
		cfg := rest.CopyConfig(env.Config)
		cfg.WarningHandler = warnings
		c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		u := profileWith(unique("unknown-kind"), nil, "sparkles", map[string]any{"glitter": true})
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), u.DeepCopy()) }) //nolint:forbidigo // cleanups run after t.Context is canceled
		if err := c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner("kubectl")); err != nil {
			t.Fatalf("unknown kind denied: %v", err)
		}
		want := "spec.plugins[0] (sparkles): this host runs no such plugin; it is ignored"
		if !slices.Contains(warnings.get(), want) {
			t.Errorf("warnings %q, want %q", warnings.get(), want)
		}
	})
}

// warningRecorder keeps the warnings the API server sends.
type warningRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warningRecorder) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.seen)
}
