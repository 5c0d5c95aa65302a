package network_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/network"
	"github.com/profilekit/profilekit/reconcilers"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

const condType = "NetworkReady"

// edgeCases are policies whose stored form differs from what we send or is
// easy to get wrong: empty rules, allow-all, empty lists, ipBlock exceptions,
// named ports, port ranges and a default deny with no rules.
const edgeCases = `
- name: edge-allow-all-ingress
  podSelector: {}
  policyTypes: [Ingress]
  ingress: [{}]
- name: edge-empty-lists
  podSelector: {}
  policyTypes: [Ingress, Egress]
  ingress: [{from: [], ports: []}]
  egress: [{to: [], ports: []}]
- name: edge-deny-egress
  podSelector: {matchLabels: {}}
  policyTypes: [Egress]
  egress: []
- name: edge-ports
  podSelector: {matchExpressions: [{key: app, operator: Exists}]}
  policyTypes: [Ingress, Egress]
  ingress:
  - ports: [{port: 8080}, {port: http-metrics}, {protocol: UDP, port: 5000, endPort: 5010}]
  egress:
  - to:
    - ipBlock: {cidr: 0.0.0.0/0, except: [10.0.0.0/8, 169.254.169.254/32]}
    - ipBlock: {cidr: "2001:db8::/32", except: ["2001:db8:1::/48"]}
    - namespaceSelector: {}
    - podSelector: {matchLabels: {app: "{{ .Profile }}"}}
      namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: "{{ .Namespace }}"}}
`

// hostDefaults returns JSON host defaults: a preset or example file, plus
// the edge cases when extra is set.
func hostDefaults(t *testing.T, source string, extra bool) []byte {
	t.Helper()
	var data []byte
	var err error
	if strings.HasSuffix(source, ".yaml") {
		data, err = os.ReadFile(source)
		if err == nil {
			data, err = yaml.YAMLToJSON(data)
		}
	} else {
		data, err = network.Preset(source)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !extra {
		return data
	}
	var cfg map[string]any
	var edges []any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(edgeCases), &edges); err != nil {
		t.Fatal(err)
	}
	own, _ := cfg["policies"].([]any)
	cfg["policies"] = append(own, edges...)
	out, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func networkPlugin(spec string) kubeflowv1.Plugin {
	p := kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: network.Kind}}
	if spec != "" {
		p.Spec = &runtime.RawExtension{Raw: []byte(spec)}
	}
	return p
}

func uniqueName(prefix string) string { return prefix + "-" + rand.String(5) }

func start(t *testing.T, defaults []byte) *testhost.Host {
	t.Helper()
	return testhost.Start(t, env, testhost.Plugin{Def: network.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults(defaults),
		reconcilers.WithResync(300 * time.Millisecond),
	}})
}

func listPolicies(t *testing.T, ns string) map[string]networkingv1.NetworkPolicy {
	t.Helper()
	var list networkingv1.NetworkPolicyList
	if err := env.Client.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]networkingv1.NetworkPolicy{}
	for _, np := range list.Items {
		out[np.Name] = np
	}
	return out
}

func names(m map[string]networkingv1.NetworkPolicy) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// waitPolicies waits until the namespace holds exactly the named policies.
func waitPolicies(t *testing.T, ns string, want ...string) map[string]networkingv1.NetworkPolicy {
	t.Helper()
	slices.Sort(want)
	var got map[string]networkingv1.NetworkPolicy
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		got = listPolicies(t, ns)
		d := cmp.Diff(want, names(got))
		return d == "", "policies (-want +got):\n" + d
	})
	return got
}

func setProfile(t *testing.T, name string, edit func(*kubeflowv1.Profile)) {
	t.Helper()
	testhost.UpdateProfile(t, env.Client, name, edit)
}

// assertQuietResync waits for several reconciles of nothing changed and
// fails on any mutating request.
func assertQuietResync(t *testing.T, h *testhost.Host) {
	t.Helper()
	// Passes and Events set off by the last change may still be in flight;
	// let them finish before counting.
	if got := h.ResyncWrites(t, 3, network.Kind); len(got) != 0 {
		t.Errorf("mutating requests on resync = %v, want none", got)
	}
}

// TestConfigurationsAreAcceptedAndResyncIsQuiet applies each preset and the
// StatCan-style example, all gates on and with the edge cases added, to the
// real API server, then checks that a resync sends nothing.
func TestConfigurationsAreAcceptedAndResyncIsQuiet(t *testing.T) {
	for _, source := range []string{"isolated", "multitenant", "statcan", "testdata/statcan.yaml"} {
		t.Run(source, func(t *testing.T) {
			defaults := hostDefaults(t, source, true)
			cfg, err := network.LoadConfig(defaults)
			if err != nil {
				t.Fatal(err)
			}
			policies, err := cfg.Effective()
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, p := range policies {
				want = append(want, p.Name)
			}
			h := start(t, defaults)
			name := uniqueName("accept")
			labels := map[string]string{"gitea.aaw.example.ca/enabled": "true"}
			spec := ""
			if strings.HasSuffix(source, "statcan.yaml") {
				spec = `{"gates":{"s3proxy":true}}`
			}
			p := testhost.NewProfile(t, env.Client, name, labels, networkPlugin(spec))

			got := waitPolicies(t, name, want...)
			testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, fmt.Sprintf("%d objects in sync", len(want)))
			for _, np := range got {
				if diff := cmp.Diff(plugins.OwnershipLabels(network.Kind, name), np.Labels); diff != "" {
					t.Errorf("%s labels (-want +got):\n%s", np.Name, diff)
				}
				if len(np.OwnerReferences) != 1 || np.OwnerReferences[0].UID != p.UID {
					t.Errorf("%s owner references = %+v, want one to Profile %s", np.Name, np.OwnerReferences, name)
				}
				if len(np.Spec.PolicyTypes) == 0 {
					t.Errorf("%s has no policy types", np.Name)
				}
			}
			if got := got["edge-ports"].Spec.Egress[0].To[3].PodSelector.MatchLabels["app"]; got != name {
				t.Errorf("edge-ports placeholder became %q, want the Profile's name %q", got, name)
			}
			if got := got["edge-ports"].Spec.Egress[0].To[0].IPBlock.Except; !slices.Equal(got, []string{"10.0.0.0/8", "169.254.169.254/32"}) {
				t.Errorf("edge-ports ipBlock except = %v", got)
			}
			if n := len(got["edge-allow-all-ingress"].Spec.Ingress); n != 1 {
				t.Errorf("edge-allow-all-ingress has %d ingress rules, want the one allow-all rule", n)
			}
			assertQuietResync(t, h)
		})
	}
}

func TestGateToggles(t *testing.T) {
	h := start(t, hostDefaults(t, "testdata/statcan.yaml", false))
	name := uniqueName("gates")
	const gate = "gitea.aaw.example.ca/enabled"
	always := append(slices.Clone(statcanPreset),
		"allow-same-namespace", "allow-system-to-notebook",
	)
	gitea := []string{"allow-gitea-ingress", "allow-gitea-egress-postgres"}
	s3proxy := []string{"allow-s3proxy-ingress", "allow-s3proxy-egress"}
	testhost.NewProfile(t, env.Client, name, nil, networkPlugin(""))
	base := waitPolicies(t, name, always...)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "12 objects in sync")

	// unchanged reports whether the always-on policies are the same objects
	// at the same versions, so that a toggle touched only its own policies.
	unchanged := func(t *testing.T) {
		t.Helper()
		now := listPolicies(t, name)
		for _, n := range always {
			if now[n].UID != base[n].UID || now[n].ResourceVersion != base[n].ResourceVersion {
				t.Errorf("%s changed on a gate toggle: resourceVersion %s -> %s", n, base[n].ResourceVersion, now[n].ResourceVersion)
			}
		}
	}

	t.Run("label true adds exactly the gated policies", func(t *testing.T) {
		h.Counter.Reset()
		setProfile(t, name, func(p *kubeflowv1.Profile) { p.Labels = map[string]string{gate: "true"} })
		waitPolicies(t, name, append(slices.Clone(always), gitea...)...)
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "14 objects in sync")
		unchanged(t)
		if got := h.Counter.Mutating("networkpolicies"); len(got) != 2 {
			t.Errorf("network policy writes = %v, want the two gated policies applied", got)
		}
	})

	t.Run("label maybe removes them and says why", func(t *testing.T) {
		setProfile(t, name, func(p *kubeflowv1.Profile) { p.Labels[gate] = "maybe" })
		waitPolicies(t, name, always...)
		cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "InvalidLabel")
		for _, want := range []string{`label gitea.aaw.example.ca/enabled="maybe" is not true or false`, "allow-gitea-ingress stays off", "allow-gitea-egress-postgres stays off"} {
			if !strings.Contains(cond.Message, want) {
				t.Errorf("condition message %q does not contain %q", cond.Message, want)
			}
		}
		unchanged(t)
	})

	t.Run("label false keeps them off and is not an error", func(t *testing.T) {
		setProfile(t, name, func(p *kubeflowv1.Profile) { p.Labels[gate] = "false" })
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "12 objects in sync")
		waitPolicies(t, name, always...)
	})

	t.Run("spec gate on and off", func(t *testing.T) {
		setProfile(t, name, func(p *kubeflowv1.Profile) {
			p.Spec.Plugins = []kubeflowv1.Plugin{networkPlugin(`{"gates":{"s3proxy":true}}`)}
		})
		waitPolicies(t, name, append(slices.Clone(always), s3proxy...)...)
		setProfile(t, name, func(p *kubeflowv1.Profile) {
			p.Spec.Plugins = []kubeflowv1.Plugin{networkPlugin(`{"gates":{"s3proxy":"perhaps"}}`)}
		})
		waitPolicies(t, name, always...)
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, `InvalidSpec: gates[s3proxy]="perhaps" is not true or false`)
		unchanged(t)
	})

	t.Run("resync with an invalid gate sends nothing", func(t *testing.T) {
		assertQuietResync(t, h)
	})
}

func TestPoliciesWeDoNotManageAreNeverTouched(t *testing.T) {
	start(t, hostDefaults(t, "isolated", false))
	name := uniqueName("theirs")
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	mine := func(n string) *networkingv1.NetworkPolicy {
		return &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: name},
			Spec:       networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}},
		}
	}
	clash, other := mine("allow-dns"), mine("hand-made")
	for _, np := range []*networkingv1.NetworkPolicy{clash, other} {
		if err := env.Client.Create(t.Context(), np); err != nil {
			t.Fatal(err)
		}
	}
	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       kubeflowv1.ProfileSpec{Plugins: []kubeflowv1.Plugin{networkPlugin("")}},
	}
	if err := env.Client.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), p) }) //nolint:forbidigo // cleanups run after t.Context is canceled

	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "Conflict: NetworkPolicy "+name+"/allow-dns exists and is not managed")
	waitPolicies(t, name, "allow-dns", "allow-ingress-gateway", "allow-istiod", "allow-same-namespace", "default-deny", "hand-made")

	// Removing the plugin deletes ours and leaves theirs as they were.
	setProfile(t, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
	got := waitPolicies(t, name, "allow-dns", "hand-made")
	for _, np := range []*networkingv1.NetworkPolicy{clash, other} {
		if g := got[np.Name]; g.ResourceVersion != np.ResourceVersion || len(g.Labels) != 0 {
			t.Errorf("unmanaged %s was modified: resourceVersion %s -> %s, labels %v", np.Name, np.ResourceVersion, g.ResourceVersion, g.Labels)
		}
	}
}

// TestHandEditsArePutBack widens a policy by hand, keeping our labels and
// annotations, and deletes another; both come back as configured. A long
// resync means the repair comes from the watch on our own objects.
func TestHandEditsArePutBack(t *testing.T) {
	testhost.Start(t, env, testhost.Plugin{Def: network.Definition(), Options: []reconcilers.Option{
		reconcilers.WithDefaults(hostDefaults(t, "isolated", false)),
		reconcilers.WithResync(time.Hour),
	}})
	name := uniqueName("drift")
	testhost.NewProfile(t, env.Client, name, nil, networkPlugin(""))
	got := waitPolicies(t, name, "default-deny", "allow-same-namespace", "allow-dns", "allow-istiod", "allow-ingress-gateway")
	want := got["allow-same-namespace"].Spec

	t.Run("an allow-all rule added to our policy is removed", func(t *testing.T) {
		np := got["allow-same-namespace"]
		np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{})
		if err := env.Client.Update(t.Context(), &np); err != nil {
			t.Fatal(err)
		}
		testhost.Eventually(t, 10*time.Second, func() (bool, string) {
			var cur networkingv1.NetworkPolicy
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(&np), &cur); err != nil {
				return false, err.Error()
			}
			d := cmp.Diff(want, cur.Spec)
			return d == "", "spec (-want +got):\n" + d
		})
	})

	t.Run("a deleted policy comes back", func(t *testing.T) {
		old := got["default-deny"]
		if err := env.Client.Delete(t.Context(), &old); err != nil {
			t.Fatal(err)
		}
		testhost.Eventually(t, 10*time.Second, func() (bool, string) {
			var cur networkingv1.NetworkPolicy
			err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(&old), &cur)
			return err == nil && cur.UID != old.UID, fmt.Sprintf("default-deny not recreated (%v)", err)
		})
	})
}
