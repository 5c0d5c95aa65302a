package main

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
)

// diffShard is the label of the Profiles of TestDiff: the configurations of
// testdata/diff serve only those.
const diffShard = "diff.profilekit.dev/test"

// diffReadRules are all the rights diff needs for the plugins of
// testdata/diff: reading Profiles and the kinds they write.
var diffReadRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"kubeflow.org"}, Resources: []string{"profiles"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"resourcequotas", "limitranges"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"get", "list", "watch"}},
}

// TestDiff converges 200 Profiles under testdata/diff/base.yaml with a
// running host, then diffs other configurations against them, as a
// ServiceAccount that may only read, through a proxy that counts every
// request: the summary, one Profile's diff, the exit codes, and that diff
// sent no mutating request.
func TestDiff(t *testing.T) {
	t.Parallel()
	const n = 200
	ctx := context.WithoutCancel(t.Context())
	kubeconfig, counter := readOnlyKubeconfig(t)
	runDiffHost(t, "testdata/diff/base.yaml")
	prefix := "diff-" + rand.String(4)
	names := createProfiles(t, prefix, n)
	first := names[0]

	start := time.Now()
	testhost.Eventually(t, 90*time.Second, func() (bool, string) {
		var list kubeflowv1.ProfileList
		if err := env.Client.List(ctx, &list, client.MatchingLabels{diffShard: "true"}); err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, p := range list.Items {
			q := plugins.FindCondition(p.Status.Conditions, "QuotasReady")
			nw := plugins.FindCondition(p.Status.Conditions, "NetworkReady")
			if q != nil && q.Status == plugins.ConditionTrue && nw != nil && nw.Status == plugins.ConditionTrue {
				ready++
			}
		}
		return ready == n, fmt.Sprintf("%d of %d Profiles ready", ready, n)
	})
	t.Logf("%d Profiles converged in %s", n, time.Since(start).Round(time.Millisecond))

	diffAll := func(t *testing.T, config string, flags ...string) (int, string, string) {
		t.Helper()
		counter.Reset()
		start := time.Now()
		code, out, stderr := runMain(ctx, append([]string{"diff", "--config", config, "--kubeconfig", kubeconfig, "--all"}, flags...)...)
		t.Logf("diff --config %s --all: exit %d in %s, %s", config, code, time.Since(start).Round(time.Millisecond), counter)
		if m := counter.Mutating(); len(m) > 0 && len(flags) == 0 {
			t.Errorf("diff sent %d mutating requests, want none: %v", len(m), m[:min(len(m), 5)])
		}
		return code, out, stderr
	}

	for _, tc := range []struct {
		reason  string
		config  string
		summary string
		// fragments of the diff of the first Profile, in this order.
		diff []string
	}{{
		reason: "the configuration the host runs with changes nothing",
		config: "testdata/diff/base.yaml",
		summary: `Profiles: 200 checked, 0 touched, 0 with errors
Objects: no change
Outside calls: none
`,
	}, {
		reason: "a changed default quota changes every quota, and drops the field the new one no longer sets",
		config: "testdata/diff/quota.yaml",
		summary: `Profiles: 200 checked, 200 touched, 0 with errors
Objects:
  ResourceQuota  change 200
Outside calls: none
`,
		diff: []string{
			"# profile " + first + ", plugin quotas: change ResourceQuota " + first + "/profilekit-quota\n",
			"--- live/v1/ResourceQuota/" + first + "/profilekit-quota\n+++ desired/v1/ResourceQuota/" + first + "/profilekit-quota\n",
			"\n-    profilekit.dev/applied-hash: ",
			"\n+    profilekit.dev/applied-hash: ",
			"\n-    limits.cpu: \"2\"\n-    requests.memory: 4Gi\n+    limits.cpu: \"4\"\n",
		},
	}, {
		reason: "a new network preset creates, changes and deletes network policies",
		config: "testdata/diff/preset.yaml",
		summary: `Profiles: 200 checked, 200 touched, 0 with errors
Objects:
  NetworkPolicy.networking.k8s.io  create 400, change 200, delete 400
Outside calls: none
`,
		diff: []string{
			"# profile " + first + ", plugin network: create NetworkPolicy.networking.k8s.io " + first + "/allow-from-trusted\n--- /dev/null\n",
			"\n+          network.profilekit.dev/trusted: \"true\"\n",
			"# profile " + first + ", plugin network: delete NetworkPolicy.networking.k8s.io " + first + "/allow-ingress-gateway\n",
			"\n+++ /dev/null\n",
			"# profile " + first + ", plugin network: delete NetworkPolicy.networking.k8s.io " + first + "/allow-istiod\n",
			"# profile " + first + ", plugin network: change NetworkPolicy.networking.k8s.io " + first + "/allow-same-namespace\n",
			"\n+    - namespaceSelector:\n+        matchLabels:\n+          kubernetes.io/metadata.name: " + first + "\n",
			"# profile " + first + ", plugin network: create NetworkPolicy.networking.k8s.io " + first + "/allow-to-trusted\n",
		},
	}, {
		reason: "a plugin newly enabled for all creates its objects in every Profile",
		config: "testdata/diff/limitrange.yaml",
		summary: `Profiles: 200 checked, 200 touched, 0 with errors
Objects:
  LimitRange  create 200
Outside calls: none
`,
		diff: []string{
			"# profile " + first + ", plugin limitrange: create LimitRange " + first + "/profilekit-limits\n--- /dev/null\n+++ desired/v1/LimitRange/" + first + "/profilekit-limits\n",
			"\n+  - default:\n+      cpu: 500m\n",
		},
	}} {
		t.Run(filepath.Base(tc.config), func(t *testing.T) {
			code, out, stderr := diffAll(t, tc.config)
			want := 1
			if tc.diff == nil {
				want = 0
			}
			if code != want {
				t.Errorf("%s: exit %d, want %d; stderr:\n%s", tc.reason, code, want, stderr)
			}
			if !strings.HasPrefix(out, tc.summary) {
				t.Errorf("%s: summary:\n%s\nwant:\n%s", tc.reason, head(out, 12), tc.summary)
			}
			t.Logf("summary:\n%s", head(out, strings.Count(tc.summary, "\n")))
			one := profileDiff(out, first)
			rest := one
			for _, f := range tc.diff {
				i := strings.Index(rest, f)
				if i < 0 {
					t.Errorf("%s: the diff of profile %s lacks, or has out of order, %q:\n%s", tc.reason, first, f, one)
					break
				}
				rest = rest[i+len(f):]
			}
			if tc.diff != nil {
				t.Logf("diff of profile %s:\n%s", first, one)
			}
		})
	}

	t.Run("--server-dry-run merges on the API server, which needs write rights", func(t *testing.T) {
		code, out, stderr := runMain(ctx, "diff", "--config", "testdata/diff/quota.yaml", "--kubeconfig", writeKubeconfig(t), "--all", "--server-dry-run")
		if code != 1 || !strings.HasPrefix(out, "Profiles: 200 checked, 200 touched, 0 with errors\nObjects:\n  ResourceQuota  change 200\n") ||
			!strings.Contains(profileDiff(out, first), "\n-    limits.cpu: \"2\"\n-    requests.memory: 4Gi\n+    limits.cpu: \"4\"\n") {
			t.Errorf("as an administrator: exit %d, want 1 and the local merge's diff; stdout:\n%s\nstderr:\n%s", code, head(out, 12), stderr)
		}
		// The read-only user's dry runs are refused: the errors say so,
		// and diff exits 2.
		code, out, _ = diffAll(t, "testdata/diff/quota.yaml", "--server-dry-run")
		if code != 2 || !strings.Contains(out, "Profiles: 200 checked, 0 touched, 200 with errors\n") || !strings.Contains(out, "forbidden") {
			t.Errorf("as the read-only user: exit %d, want 2 and forbidden dry runs; stdout:\n%s", code, head(out, 12))
		}
		t.Logf("as the read-only user:\n%s", head(out, 5))
	})

	t.Run("exit 2 for an invalid configuration", func(t *testing.T) {
		code, out, stderr := diffAll(t, "testdata/diff/invalid.yaml")
		want := "testdata/diff/invalid.yaml: plugins.quotas.defaults: plugin quotas: host defaults: caps[limits.cpu]=-1 is negative"
		if code != 2 || out != "" || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, want 2 and %q on stderr; stdout %q, stderr:\n%s", code, want, out, stderr)
		}
		// The binary itself exits 2.
		if code, _, stderr := execMain(t, "diff", "--config", "testdata/diff/invalid.yaml", "--all"); code != 2 {
			t.Errorf("through main: exit %d, want 2; stderr:\n%s", code, stderr)
		}
	})

	t.Run("exit 2 for a cluster that does not answer", func(t *testing.T) {
		unreachable := writeKubeconfigFor(t, "https://"+freeAddr(t), nil, "")
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		code, out, stderr := runMain(tctx, "diff", "--config", "testdata/diff/base.yaml", "--kubeconfig", unreachable, "--all")
		if code != 2 || out != "" || !strings.Contains(stderr, "list profiles") {
			t.Errorf("exit %d, want 2 and the failed list on stderr; stdout %q, stderr:\n%s", code, out, stderr)
		}
	})

	t.Run("-f diffs the live Profiles it names", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "profiles.yaml")
		doc := fmt.Sprintf("apiVersion: kubeflow.org/v1\nkind: Profile\nmetadata:\n  name: %s\n  labels: {%s: \"true\"}\nspec:\n  owner: {kind: User, name: owner@example.org}\n", first, diffShard)
		if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		counter.Reset()
		code, out, stderr := runMain(ctx, "diff", "--config", "testdata/diff/quota.yaml", "--kubeconfig", kubeconfig, "-f", file)
		if code != 1 || !strings.HasPrefix(out, "Profiles: 1 checked, 1 touched, 0 with errors\nObjects:\n  ResourceQuota  change 1\n") {
			t.Errorf("exit %d, want 1; stdout:\n%s\nstderr:\n%s", code, head(out, 12), stderr)
		}
		if m := counter.Mutating(); len(m) > 0 {
			t.Errorf("diff -f sent mutating requests: %v", m)
		}
	})

	t.Run("the read-only user may not write", func(t *testing.T) {
		// The proof that the ServiceAccount holds only read rights: the
		// same kubeconfig's write is refused.
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		var rq corev1.ResourceQuota
		if err := c.Get(ctx, client.ObjectKey{Namespace: first, Name: "profilekit-quota"}, &rq); err != nil {
			t.Fatalf("read as the diff user: %v", err)
		}
		err = c.Delete(ctx, &rq, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("dry-run delete as the diff user: %v, want forbidden", err)
		}
	})
}

// runDiffHost runs a host with config until the test ends: a manager from
// server.NewManager, as run makes it, which other tests of the package may
// run too (controller names are not checked).
func runDiffHost(t *testing.T, config string) {
	t.Helper()
	cfg, reg := loadHostConfig(t, config)
	startHost(t, "diff", env.Config, cfg, reg, false)
}

// createProfiles creates n Profiles of diffShard, each with its namespace,
// named prefix-000 on, and deletes them when the test ends.
func createProfiles(t *testing.T, prefix string, n int) []string {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	names := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	places := make(chan struct{}, 8)
	for i := range n {
		names[i] = fmt.Sprintf("%s-%03d", prefix, i)
		places <- struct{}{}
		wg.Go(func() {
			defer func() { <-places }()
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[i]}}
			p := &kubeflowv1.Profile{
				ObjectMeta: metav1.ObjectMeta{Name: names[i], Labels: map[string]string{diffShard: "true"}},
				Spec:       kubeflowv1.ProfileSpec{Owner: rbacv1.Subject{Kind: "User", Name: "owner@example.org"}},
			}
			if err := env.Client.Create(ctx, ns); err != nil {
				errs[i] = err
				return
			}
			errs[i] = env.Client.Create(ctx, p)
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, name := range names {
			_ = env.Client.Delete(ctx, &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}})
			_ = env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create profile %s: %v", names[i], err)
		}
	}
	return names
}

// readOnlyKubeconfig makes a ServiceAccount bound to a ClusterRole of
// diffReadRules only, and returns a kubeconfig that reaches the API server
// with its token through a proxy whose requests the counter counts.
func readOnlyKubeconfig(t *testing.T) (string, *testenv.Counter) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	name := "diff-reader-" + rand.String(4)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: diffReadRules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: name}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
	}
	for _, o := range []client.Object{sa, role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, name, err)
		}
	}
	t.Cleanup(func() {
		for _, o := range []client.Object{binding, role, sa} {
			_ = env.Client.Delete(ctx, o)
		}
	})
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := env.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("token of %s: %v", name, err)
	}

	// The proxy adds no credentials of its own: the API server sees the
	// ServiceAccount's token, which the client sends.
	counter := &testenv.Counter{}
	upstream := counter.Counting(&rest.Config{Host: env.Config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}})
	transport, err := rest.TransportFor(upstream)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	// TLS, since clients send credentials only over TLS.
	srv := httptest.NewTLSServer(proxy)
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return writeKubeconfigFor(t, srv.URL, ca, tr.Status.Token), counter
}

// writeKubeconfigFor writes a kubeconfig for server, whose certificate ca
// signs, with token.
func writeKubeconfigFor(t *testing.T, server string, ca []byte, token string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// profileDiff returns the part of diff's output about one Profile's
// objects.
func profileDiff(out, profile string) string {
	re := regexp.MustCompile(`(?m)^# profile ` + regexp.QuoteMeta(profile) + `, `)
	loc := re.FindStringIndex(out)
	if loc == nil {
		return ""
	}
	rest := out[loc[0]:]
	next := regexp.MustCompile(`(?m)^# profile `)
	for _, m := range next.FindAllStringIndex(rest, -1) {
		if !strings.HasPrefix(rest[m[0]:], "# profile "+profile+", ") {
			return rest[:m[0]]
		}
	}
	return rest
}

func head(s string, lines int) string {
	parts := strings.SplitAfter(s, "\n")
	return strings.Join(parts[:min(len(parts), lines)], "")
}
