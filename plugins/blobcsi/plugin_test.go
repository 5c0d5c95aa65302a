package blobcsi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/blobcsi"
	"github.com/profilekit/profilekit/reconcilers"
)

var (
	env     *testenv.Env
	azurite *testenv.Azurite
	opaSrv  *testenv.OPA
)

const (
	condType  = "BlobcsiReady"
	systemNS  = "profilekit-system"
	secret    = "azurite-credentials"
	pollEvery = 300 * time.Millisecond
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	// Fuzz workers run pure functions only: no servers.
	if slices.ContainsFunc(os.Args[1:], func(a string) bool { return strings.HasPrefix(a, "-test.fuzzworker") }) {
		return m.Run()
	}
	fail := func(err error) int { fmt.Fprintf(os.Stderr, "testenv: %v\n", err); return 1 }
	var err error
	if azurite, err = testenv.StartAzurite(); err != nil {
		return fail(err)
	}
	defer azurite.Close()
	example := filepath.Join(testenv.RepoRoot(), "examples", "opa")
	if opaSrv, err = testenv.StartOPA(filepath.Join(example, "grants.rego")); err != nil {
		return fail(err)
	}
	defer opaSrv.Stop()
	if env, err = testenv.Start(testenv.Options{ControllerManager: true}); err != nil {
		return fail(err)
	}
	defer env.Stop()
	ctx := context.Background()
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNS}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: systemNS}, StringData: map[string]string{
			blobcsi.SecretAccountName: azurite.Account, blobcsi.SecretAccountKey: azurite.Key}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			return fail(err)
		}
	}
	return m.Run()
}

// counter counts the requests sent to Azure (Azurite here).
type counter struct {
	mu    sync.Mutex
	reqs  []string
	inner http.RoundTripper
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	c.mu.Unlock()
	return c.inner.RoundTrip(r)
}

func (c *counter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.reqs
	c.reqs = nil
	return out
}

// grantsDoc is the example policy's data: which teams read and write which
// shared buckets.
type grantsDoc struct {
	Classifications []string                  `json:"classifications"`
	Teams           map[string][]string       `json:"teams"`
	Buckets         map[string]map[string]any `json:"buckets"`
}

func putGrants(t *testing.T, path string, d grantsDoc) {
	t.Helper()
	if err := opaSrv.PutData(context.Background(), path, d); err != nil {
		t.Fatal(err)
	}
}

// hostConfig is the host's section for a test: three instances on Azurite
// and one OPA grants source whose document lives under dataPath.
func hostConfig(dataPath string, extra map[string]any) []byte {
	inst := func(name, class string, ro, def bool) map[string]any {
		return map[string]any{
			"name": name, "classification": class, "account": azurite.Account, "blobEndpoint": azurite.BlobURL,
			"credentials": map[string]any{"secretName": secret, "secretNamespace": systemNS},
			"capacity":    "50Gi", "readOnly": ro, "default": def,
		}
	}
	cfg := map[string]any{
		"storage": []any{
			inst("standard", "unclassified", false, true),
			inst("standard-ro", "unclassified", true, false),
			inst("protected-b", "protected-b", false, false),
		},
		"grantSources": []any{map[string]any{
			"name": "unclassified", "instance": "standard",
			"opa": map[string]any{"url": opaSrv.URL, "path": "storage/grants/unclassified", "interval": pollEvery.String()},
		}},
		"pvcLabels": map[string]string{"automount.example.org/blob": "true"},
		// The principals the tests' grants name (spn) to mount buckets.
		"principals": map[string]any{
			"sp":        principal("sp"),
			"sp-census": principal("sp-census"),
			"sp-labour": principal("sp-labour"),
		},
		// Each host config counts its deletions apart: tests share the
		// API server, and the count outlives a host.
		"deleteRecord": map[string]any{"name": unique("deletes")},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	// The policy reads data.storage; each test has its own copy of the
	// policy under its own package so that tests do not share documents.
	_ = dataPath
	b, _ := json.Marshal(cfg)
	return b
}

// principal is a service principal of the host's config whose Secret is
// named after it; only the driver would read it.
func principal(name string) map[string]any {
	return map[string]any{"clientID": name + "-client", "tenantID": "tenant-" + name,
		"secret": map[string]any{"name": name, "namespace": systemNS}}
}

// perProfile counts Apply calls per Profile.
type perProfile struct {
	plugins.Plugin
	mu sync.Mutex
	n  map[string]int
}

func (p *perProfile) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	p.mu.Lock()
	p.n[req.Profile.Name]++
	p.mu.Unlock()
	return p.Plugin.Apply(ctx, req)
}

func (p *perProfile) counts(names ...string) map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for _, n := range names {
		out[n] = p.n[n]
	}
	return out
}

type harness struct {
	host    *testhost.Host
	azure   *counter
	applies *perProfile
	// shard keeps each test's host to its own Profiles.
	shard map[string]string
}

func (h *harness) profile(t *testing.T, name string, ps ...kubeflowv1.Plugin) {
	t.Helper()
	testhost.NewProfile(t, env.Client, name, h.shard, ps...)
}

func start(t *testing.T, cfg []byte, opts ...reconcilers.Option) *harness {
	t.Helper()
	return startShard(t, map[string]string{"test": strings.ToLower(rand.String(6))}, cfg, opts...)
}

// startShard runs a host, with fresh plugin state, for the Profiles labelled
// shard. A second call for one shard after the first host stopped is a
// restart.
func startShard(t *testing.T, shard map[string]string, cfg []byte, opts ...reconcilers.Option) *harness {
	t.Helper()
	az := &counter{inner: http.DefaultTransport}
	def := blobcsi.Definition(blobcsi.WithHTTPClient(&http.Client{Transport: az}))
	pp := &perProfile{Plugin: def.Plugin, n: map[string]int{}}
	def.Plugin = pp
	h := testhost.Start(t, env, testhost.Plugin{Def: def, Options: append([]reconcilers.Option{
		reconcilers.WithDefaults(cfg), reconcilers.WithShard(labels.SelectorFromSet(shard))}, opts...)})
	return &harness{host: h, azure: az, applies: pp, shard: shard}
}

func blobPlugin(instances ...string) kubeflowv1.Plugin {
	var raw []byte
	if len(instances) > 0 {
		raw, _ = json.Marshal(map[string]any{"instances": instances})
	}
	p := kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: blobcsi.Kind}}
	if raw != nil {
		p.Spec = &runtime.RawExtension{Raw: raw}
	}
	return p
}

func containers(t *testing.T) []string {
	t.Helper()
	cred, err := service.NewSharedKeyCredential(azurite.Account, azurite.Key)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.NewClientWithSharedKeyCredential(azurite.BlobURL+"/", cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	pager := svc.NewListContainersPager(nil)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page.ContainerItems {
			names = append(names, *c.Name)
		}
	}
	return names
}

func claims(t *testing.T, ns string) map[string]corev1.PersistentVolumeClaim {
	t.Helper()
	var l corev1.PersistentVolumeClaimList
	if err := env.Client.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.PersistentVolumeClaim{}
	for _, c := range l.Items {
		out[c.Name] = c
	}
	return out
}

func pv(t *testing.T, name string) (*corev1.PersistentVolume, error) {
	t.Helper()
	var v corev1.PersistentVolume
	err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, &v)
	return &v, err
}

// liveClaims returns the claims that are not being deleted, name -> access mode.
func liveClaims(t *testing.T, ns string) map[string]string {
	out := map[string]string{}
	for n, c := range claims(t, ns) {
		if c.DeletionTimestamp == nil {
			out[n] = string(c.Spec.AccessModes[0])
		}
	}
	return out
}

func waitClaims(t *testing.T, ns string, want map[string]string) {
	t.Helper()
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		got := liveClaims(t, ns)
		d := cmp.Diff(want, got)
		return d == "", "claims (-want +got):\n" + d
	})
}

func unique(prefix string) string { return prefix + "-" + rand.String(5) }

func TestProfileVolumesAndGrants(t *testing.T) {
	ctx := context.Background()
	a, b, c := unique("team-a"), unique("team-b"), unique("team-c")
	putGrants(t, "storage", grantsDoc{
		Classifications: []string{"unclassified"},
		Teams:           map[string][]string{"census": {a, b}, "labour": {c}},
		Buckets: map[string]map[string]any{
			"census-shared": {"classification": "unclassified", "readers": []string{"labour"}, "writers": []string{"census"}, "spn": "sp-census"},
		},
	})
	h := start(t, hostConfig("storage", nil), reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin("standard", "standard-ro"))
	h.profile(t, b, blobPlugin())
	h.profile(t, c, blobPlugin("protected-b"))

	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany", "standard-ro": "ReadOnlyMany", "census-shared": "ReadWriteMany"})
	waitClaims(t, b, map[string]string{"standard": "ReadWriteMany", "census-shared": "ReadWriteMany"})
	waitClaims(t, c, map[string]string{"protected-b": "ReadWriteMany", "census-shared": "ReadOnlyMany"})
	for _, n := range []string{a, b, c} {
		testhost.WaitCondition(t, env.Client, n, condType, plugins.ConditionTrue, "")
	}

	t.Run("containers exist in the account, one per Profile", func(t *testing.T) {
		got := containers(t)
		for _, n := range []string{a, b, c} {
			if !slices.Contains(got, n) {
				t.Errorf("container %s missing from %v", n, got)
			}
		}
		t.Logf("containers listed through azblob: %v", got)
	})

	t.Run("the PV and claim of a read-only instance", func(t *testing.T) {
		v, err := pv(t, a+"-standard-ro")
		if err != nil {
			t.Fatal(err)
		}
		want := corev1.PersistentVolumeSpec{
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			MountOptions:                  []string{"-o ro"},
		}
		got := corev1.PersistentVolumeSpec{AccessModes: v.Spec.AccessModes, PersistentVolumeReclaimPolicy: v.Spec.PersistentVolumeReclaimPolicy, MountOptions: v.Spec.MountOptions}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("PV spec (-want +got):\n%s", diff)
		}
		csi := v.Spec.CSI
		if csi == nil || csi.Driver != blobcsi.Driver || !csi.ReadOnly || csi.VolumeAttributes["containerName"] != a ||
			csi.VolumeAttributes["storageAccount"] != azurite.Account || csi.NodeStageSecretRef == nil || csi.NodeStageSecretRef.Name != secret {
			t.Errorf("csi = %+v", csi)
		}
		if ref := v.Spec.ClaimRef; ref == nil || ref.Namespace != a || ref.Name != "standard-ro" {
			t.Errorf("claimRef = %+v", ref)
		}
		pvc := claims(t, a)["standard-ro"]
		if pvc.Spec.VolumeName != v.Name || pvc.Labels["automount.example.org/blob"] != "true" || !plugins.IsOwnedBy(pvc.Labels, blobcsi.Kind, a) {
			t.Errorf("claim = %+v", pvc.ObjectMeta.Labels)
		}
	})

	t.Run("volume handles are unique", func(t *testing.T) {
		var l corev1.PersistentVolumeList
		if err := env.Client.List(ctx, &l, client.MatchingLabels{plugins.LabelPlugin: blobcsi.Kind}); err != nil {
			t.Fatal(err)
		}
		seen := map[string]string{}
		for _, v := range l.Items {
			if other, dup := seen[v.Spec.CSI.VolumeHandle]; dup {
				t.Errorf("PVs %s and %s share the volume handle %s", other, v.Name, v.Spec.CSI.VolumeHandle)
			}
			seen[v.Spec.CSI.VolumeHandle] = v.Name
		}
	})

	t.Run("a grant change reaches only the Profiles it concerns within one poll interval", func(t *testing.T) {
		time.Sleep(2 * pollEvery)
		before := h.applies.counts(a, b, c)
		changed := time.Now()
		// A new bucket that only team-c's team reads: only c's grants change.
		putGrants(t, "storage", grantsDoc{
			Classifications: []string{"unclassified"},
			Teams:           map[string][]string{"census": {a, b}, "labour": {c}},
			Buckets: map[string]map[string]any{
				"census-shared": {"classification": "unclassified", "readers": []string{"labour"}, "writers": []string{"census"}, "spn": "sp-census"},
				"labour-shared": {"classification": "unclassified", "readers": []string{"labour"}, "spn": "sp-labour"},
			},
		})
		waitClaims(t, c, map[string]string{"protected-b": "ReadWriteMany", "census-shared": "ReadOnlyMany", "labour-shared": "ReadOnlyMany"})
		took := time.Since(changed)
		t.Logf("the new claim of %s was there %s after the change (poll interval %s)", c, took.Round(time.Millisecond), pollEvery)
		// One poll interval until the poller sees it, then one reconcile.
		if took > pollEvery+2*time.Second {
			t.Errorf("the change took %s to reach %s, want about one poll interval (%s)", took, c, pollEvery)
		}
		time.Sleep(2 * pollEvery)
		after := h.applies.counts(a, b, c)
		if after[a] != before[a] || after[b] != before[b] {
			t.Errorf("Profiles without a change were reconciled: before %v, after %v", before, after)
		}
		if after[c] == before[c] {
			t.Errorf("%s was not reconciled", c)
		}
		t.Logf("reconciles caused by the change: %s=%d %s=%d %s=%d", a, after[a]-before[a], b, after[b]-before[b], c, after[c]-before[c])
	})
}

// mountingPod creates a pod in ns that mounts claim, bound to a node (none
// runs here, so it stays Pending), which is what a running notebook looks
// like to the pvc-protection controller.
func mountingPod(t *testing.T, ns, name, claim string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if err := env.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName: "node-a",
			Containers: []corev1.Container{{Name: "nb", Image: "notebook",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// TestResyncSendsNothing: once a Profile's containers and volumes exist,
// passes send no mutating request to the API server and no request at all
// to Azure.
func TestResyncSendsNothing(t *testing.T) {
	a, b := unique("team-a"), unique("team-b")
	putGrants(t, "storage", grantsDoc{
		Classifications: []string{"unclassified"},
		Teams:           map[string][]string{"census": {a}, "labour": {b}},
		Buckets: map[string]map[string]any{
			"census-shared": {"classification": "unclassified", "readers": []string{"labour"}, "writers": []string{"census"}, "spn": "sp-census"},
		},
	})
	h := start(t, hostConfig("storage", nil), reconcilers.WithResync(300*time.Millisecond))
	h.profile(t, a, blobPlugin("standard", "standard-ro", "protected-b"))
	h.profile(t, b, blobPlugin())
	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany", "standard-ro": "ReadOnlyMany", "protected-b": "ReadWriteMany", "census-shared": "ReadWriteMany"})
	waitClaims(t, b, map[string]string{"standard": "ReadWriteMany", "census-shared": "ReadOnlyMany"})
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	testhost.WaitCondition(t, env.Client, b, condType, plugins.ConditionTrue, "")
	first := h.azure.take()
	t.Logf("Azure requests to converge (2 Profiles, 4 containers): %d", len(first))
	before := h.applies.counts(a, b)
	writes := h.host.ResyncWrites(t, 3, blobcsi.Kind)
	azure := h.azure.take()
	after := h.applies.counts(a, b)
	if len(writes) != 0 {
		t.Errorf("mutating requests on resync = %v, want none", writes)
	}
	if len(azure) != 0 {
		t.Errorf("Azure requests on resync = %v, want none", azure)
	}
	t.Logf("resync passes: %s=%d %s=%d; mutating requests %d; Azure requests %d",
		a, after[a]-before[a], b, after[b]-before[b], len(writes), len(azure))
}

func TestWithdrawnGrantWithMountingPod(t *testing.T) {
	a := unique("team-a")
	doc := grantsDoc{
		Classifications: []string{"unclassified"},
		Teams:           map[string][]string{"census": {a}, "others": {"someone-else"}},
		Buckets: map[string]map[string]any{
			"census-shared": {"classification": "unclassified", "readers": []string{"census"}, "spn": "sp"},
			"other-bucket":  {"classification": "unclassified", "readers": []string{"others"}, "spn": "sp"},
		},
	}
	putGrants(t, "storage", doc)
	h := start(t, hostConfig("storage", map[string]any{"maxVolumeDeletes": 100}), reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin())
	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany", "census-shared": "ReadOnlyMany"})
	pod := mountingPod(t, a, "notebook-0", "census-shared")

	doc.Buckets["census-shared"]["readers"] = []string{"others"}
	putGrants(t, "storage", doc)
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, blobcsi.ReasonVolumeInUse)
	if !strings.Contains(cond.Message, "notebook-0") {
		t.Errorf("condition %q does not name the pod", cond.Message)
	}
	t.Logf("condition: %s", cond.Message)

	c := claims(t, a)["census-shared"]
	if c.DeletionTimestamp == nil || !slices.Contains(c.Finalizers, "kubernetes.io/pvc-protection") {
		t.Errorf("claim = deletion %v, finalizers %v; want deleted and held by kubernetes.io/pvc-protection", c.DeletionTimestamp, c.Finalizers)
	}
	var got corev1.Pod
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), &got); err != nil || got.DeletionTimestamp != nil || got.UID != pod.UID {
		t.Errorf("pod after the grant was withdrawn: %v, deletion %v; want it untouched", err, got.DeletionTimestamp)
	}
	// The PV waits for its claim.
	if v, err := pv(t, a+"-census-shared"); err != nil || v.DeletionTimestamp != nil {
		t.Errorf("PV: %v, deletion %v; want it kept while its claim is held", err, v.DeletionTimestamp)
	}
	// A few seconds later the pod is still there and the claim still held.
	time.Sleep(2 * time.Second)
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), &got); err != nil || got.DeletionTimestamp != nil {
		t.Fatalf("pod: %v, deletion %v; want it untouched", err, got.DeletionTimestamp)
	}

	// The user stops the notebook: the claim and then the PV go, and the
	// condition clears.
	if err := env.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 60*time.Second, func() (bool, string) {
		_, cerr := claims(t, a)["census-shared"]
		_, perr := pv(t, a+"-census-shared")
		return !cerr && apierrors.IsNotFound(perr), fmt.Sprintf("claim present %v, PV: %v", cerr, perr)
	})
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
}

func TestGrantsSourceFailuresDeleteNothing(t *testing.T) {
	a, b := unique("team-a"), unique("team-b")
	doc := grantsDoc{
		Classifications: []string{"unclassified"},
		Teams:           map[string][]string{"census": {a}, "labour": {b}},
		Buckets: map[string]map[string]any{
			"census-shared": {"classification": "unclassified", "readers": []string{"census"}, "writers": []string{"labour"}, "spn": "sp"},
		},
	}
	putGrants(t, "storage", doc)
	h := start(t, hostConfig("storage", nil), reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin())
	h.profile(t, b, blobPlugin())
	wantA := map[string]string{"standard": "ReadWriteMany", "census-shared": "ReadOnlyMany"}
	wantB := map[string]string{"standard": "ReadWriteMany", "census-shared": "ReadWriteMany"}
	waitClaims(t, a, wantA)
	waitClaims(t, b, wantB)
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")

	stale := func(t *testing.T, reason string) {
		t.Helper()
		for _, n := range []string{a, b} {
			cond := testhost.WaitCondition(t, env.Client, n, condType, plugins.ConditionFalse, reason)
			if !strings.Contains(cond.Message, blobcsi.ReasonGrantsStale) {
				t.Errorf("%s condition %q does not say the grants are stale", n, cond.Message)
			}
		}
		// Several polls later, nothing was deleted.
		time.Sleep(3 * pollEvery)
		if got := liveClaims(t, a); !cmp.Equal(wantA, got) {
			t.Errorf("claims of %s = %v, want %v kept", a, got, wantA)
		}
		if got := liveClaims(t, b); !cmp.Equal(wantB, got) {
			t.Errorf("claims of %s = %v, want %v kept", b, got, wantB)
		}
		if n := refreshes(t, "unclassified", reason); n == 0 {
			t.Errorf("profilekit_grants_refresh_total{result=%s} = 0", reason)
		}
	}
	recovered := func(t *testing.T) {
		t.Helper()
		putGrants(t, "storage", doc)
		for _, n := range []string{a, b} {
			testhost.WaitCondition(t, env.Client, n, condType, plugins.ConditionTrue, "")
		}
	}

	t.Run("OPA stopped", func(t *testing.T) {
		if err := opaSrv.Stop(); err != nil {
			t.Fatal(err)
		}
		stale(t, "Unreachable")
		if err := opaSrv.Start(); err != nil {
			t.Fatal(err)
		}
		// The restarted server serves the policy file, not the pushed data
		// (undefined), until the data are pushed again.
		recovered(t)
	})
	t.Run("malformed result", func(t *testing.T) {
		bad := doc
		bad.Buckets = map[string]map[string]any{"Census_Shared": {"classification": "unclassified", "readers": []string{"census"}}}
		putGrants(t, "storage", bad)
		stale(t, "Malformed")
		recovered(t)
	})
	t.Run("empty after non-empty", func(t *testing.T) {
		empty := doc
		empty.Buckets = map[string]map[string]any{}
		putGrants(t, "storage", empty)
		stale(t, "DropTooLarge")
		recovered(t)
	})
}

// refreshes reads profilekit_grants_refresh_total for a source and result.
func refreshes(t *testing.T, source, result string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "profilekit_grants_refresh_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["source"] == source && l["result"] == result {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func TestAzuriteStoppedIsRetried(t *testing.T) {
	putGrants(t, "storage", grantsDoc{Classifications: []string{"unclassified"}})
	h := start(t, hostConfig("storage", nil), reconcilers.WithResync(time.Hour))
	if err := azurite.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			_ = azurite.Start()
		}
	}()
	a := unique("team-a")
	h.profile(t, a, blobPlugin())
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, "AzureBlob")
	t.Logf("while Azurite is stopped: %s", cond.Message)
	if got := liveClaims(t, a); len(got) != 0 {
		t.Errorf("claims written before their container exists: %v", got)
	}
	if err := azurite.Start(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	// Retried with backoff: no change to the Profile is needed.
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany"})
	if !slices.Contains(containers(t), a) {
		t.Errorf("container %s missing after recovery", a)
	}
}

func TestRetention(t *testing.T) {
	putGrants(t, "storage", grantsDoc{Classifications: []string{"unclassified"}})
	for _, ret := range []plugins.Retention{plugins.RetentionRetain, plugins.RetentionDelete} {
		t.Run(string(ret), func(t *testing.T) {
			h := start(t, hostConfig("storage", nil), reconcilers.WithRetention(ret))
			a := unique("keep")
			h.profile(t, a, blobPlugin("standard", "protected-b"))
			waitClaims(t, a, map[string]string{"standard": "ReadWriteMany", "protected-b": "ReadWriteMany"})
			if !slices.Contains(containers(t), a) {
				t.Fatalf("container %s missing", a)
			}
			// Revoke: the plugin is taken off the Profile.
			testhost.UpdateProfile(t, env.Client, a, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
			testhost.Eventually(t, 30*time.Second, func() (bool, string) {
				var p kubeflowv1.Profile
				if err := env.Client.Get(context.Background(), client.ObjectKey{Name: a}, &p); err != nil {
					return false, err.Error()
				}
				return !slices.Contains(p.Finalizers, "profilekit.dev/blobcsi"), fmt.Sprintf("finalizers %v", p.Finalizers)
			})
			if got := liveClaims(t, a); len(got) != 0 {
				t.Errorf("claims after revoke = %v, want all deleted", got)
			}
			has := slices.Contains(containers(t), a)
			if want := ret == plugins.RetentionRetain; has != want {
				t.Errorf("container %s exists = %v after revoke with retention %s, want %v", a, has, ret, want)
			}
		})
	}
}

func TestVolumeDeletesAreCapped(t *testing.T) {
	a, b := unique("team-a"), unique("team-b")
	doc := grantsDoc{
		Classifications: []string{"unclassified"},
		Teams:           map[string][]string{"census": {a, b}},
		Buckets: map[string]map[string]any{
			"census-1": {"classification": "unclassified", "readers": []string{"census"}, "spn": "sp"},
			"census-2": {"classification": "unclassified", "readers": []string{"census"}, "spn": "sp"},
		},
	}
	putGrants(t, "storage", doc)
	// Three volume deletions per hour across the cluster; the grants source
	// may drop everything at once, so that only the cap holds.
	cfg := map[string]any{"maxVolumeDeletes": 3, "deleteWindow": "1h"}
	h := start(t, hostConfigWithDrop(cfg, 1), reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin())
	h.profile(t, b, blobPlugin())
	both := map[string]string{"standard": "ReadWriteMany", "census-1": "ReadOnlyMany", "census-2": "ReadOnlyMany"}
	waitClaims(t, a, both)
	waitClaims(t, b, both)

	// Withdrawing both buckets would delete four volumes.
	doc.Buckets = map[string]map[string]any{}
	putGrants(t, "storage", doc)
	held := 0
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		var msgs []string
		held = 0
		for _, n := range []string{a, b} {
			var p kubeflowv1.Profile
			if err := env.Client.Get(context.Background(), client.ObjectKey{Name: n}, &p); err != nil {
				return false, err.Error()
			}
			c := plugins.FindCondition(p.Status.Conditions, condType)
			if c != nil && strings.Contains(c.Message, blobcsi.ReasonVolumeDeletesHeld) {
				held++
				msgs = append(msgs, c.Message)
			}
		}
		return held == 1, fmt.Sprintf("%d Profiles held: %v", held, msgs)
	})
	// One Profile's two volumes went; the other's two would pass the cap of
	// three, so they stay and its condition says why.
	left := len(liveClaims(t, a)) + len(liveClaims(t, b))
	if left != 4 {
		t.Errorf("claims left = %d, want 4 (2 standard + 2 held)", left)
	}
	for _, n := range []string{a, b} {
		t.Logf("%s claims: %v", n, liveClaims(t, n))
	}
}

// hostConfigWithDrop is hostConfig with the grants source's maxDropShare.
func hostConfigWithDrop(extra map[string]any, share float64) []byte {
	var cfg map[string]any
	_ = json.Unmarshal(hostConfig("storage", extra), &cfg)
	cfg["grantSources"].([]any)[0].(map[string]any)["maxDropShare"] = share
	b, _ := json.Marshal(cfg)
	return b
}

func TestImmutableChangeReplacesThePairWhenUnmounted(t *testing.T) {
	a := unique("team-a")
	doc := grantsDoc{
		Classifications: []string{"unclassified"},
		Teams:           map[string][]string{"census": {a}},
		Buckets: map[string]map[string]any{
			"census-shared": {"classification": "unclassified", "readers": []string{"census"}, "spn": "sp"},
		},
	}
	putGrants(t, "storage", doc)
	h := start(t, hostConfig("storage", nil), reconcilers.WithResync(time.Hour))
	h.profile(t, a, blobPlugin())
	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany", "census-shared": "ReadOnlyMany"})
	old := claims(t, a)["census-shared"]
	pod := mountingPod(t, a, "notebook-0", "census-shared")

	// The reader becomes a writer: the access mode of a claim cannot change.
	doc.Buckets["census-shared"]["writers"] = []string{"census"}
	putGrants(t, "storage", doc)
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, "is replaced when pods notebook-0 no longer mount it")
	t.Logf("while mounted: %s", cond.Message)
	if c := claims(t, a)["census-shared"]; c.UID != old.UID || c.DeletionTimestamp != nil {
		t.Errorf("the mounted claim was touched: uid %s (was %s), deletion %v", c.UID, old.UID, c.DeletionTimestamp)
	}

	if err := env.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 60*time.Second, func() (bool, string) {
		c, ok := claims(t, a)["census-shared"]
		return ok && c.UID != old.UID && c.DeletionTimestamp == nil && c.Spec.AccessModes[0] == corev1.ReadWriteMany,
			fmt.Sprintf("claim present %v uid %s modes %v", ok, c.UID, c.Spec.AccessModes)
	})
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")
}

func TestInvalidSpecIsReportedAndDeletesNothing(t *testing.T) {
	putGrants(t, "storage", grantsDoc{Classifications: []string{"unclassified"}})
	h := start(t, hostConfig("storage", nil), reconcilers.WithResync(time.Hour))
	a, b := unique("team-a"), unique("team-b")
	h.profile(t, a, blobPlugin("standard"))
	h.profile(t, b, blobPlugin())
	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany"})
	testhost.UpdateProfile(t, env.Client, a, func(p *kubeflowv1.Profile) { p.Spec.Plugins = []kubeflowv1.Plugin{blobPlugin("premium")} })
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, `instances[0]: "premium" is not an instance the host offers`)
	t.Logf("condition: %s", cond.Message)
	if got := liveClaims(t, a); !cmp.Equal(got, map[string]string{"standard": "ReadWriteMany"}) {
		t.Errorf("claims after an invalid spec = %v, want the standard claim kept", got)
	}
	// Another Profile is still served.
	waitClaims(t, b, map[string]string{"standard": "ReadWriteMany"})
	testhost.WaitCondition(t, env.Client, b, condType, plugins.ConditionTrue, "")
}
