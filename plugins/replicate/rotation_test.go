package replicate_test

// This file holds the test of a rotated source reaching the copies of 200
// Profiles, and the wait it needs.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/replicate"
	"github.com/profilekit/profilekit/reconcilers"
)

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
		if err := env.Client.List(t.Context(), &list, client.MatchingLabels{plugins.LabelPlugin: replicate.Kind}); err != nil {
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
