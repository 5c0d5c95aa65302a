package blobcsi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/blobcsi"
	"github.com/profilekit/profilekit/reconcilers"
)

// oauthWorld is an Azurite that takes bearer tokens over TLS and a local
// Microsoft Entra ID stand-in, both with certificates of one test authority.
type oauthWorld struct {
	tls     *testenv.TLS
	azurite *testenv.Azurite
	aad     *testenv.TokenEndpoint
	// sent records what the plugin sent: method, host role and path, and the
	// Authorization scheme (never its value).
	mu   sync.Mutex
	sent []string
}

func startOAuth(t *testing.T) *oauthWorld {
	t.Helper()
	tl, err := testenv.NewTLS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	az, err := testenv.StartAzurite(testenv.WithOAuth(tl))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { az.Close() })
	aad := testenv.StartTokenEndpoint(tl)
	t.Cleanup(aad.Close)
	return &oauthWorld{tls: tl, azurite: az, aad: aad}
}

// RoundTrip records a request and sends it through a client that trusts
// the test authority.
func (w *oauthWorld) RoundTrip(r *http.Request) (*http.Response, error) {
	role := "azurite"
	if strings.HasPrefix(w.aad.URL, r.URL.Scheme+"://"+r.URL.Host) {
		role = "token-endpoint"
	}
	scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	w.mu.Lock()
	w.sent = append(w.sent, r.Method+" "+role+" "+r.URL.Path+" auth="+scheme)
	w.mu.Unlock()
	return w.tls.Client().Transport.RoundTrip(r)
}

func (w *oauthWorld) requests() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.sent)
}

// start runs a host whose blobcsi plugin reaches Azure through w.
func (w *oauthWorld) start(t *testing.T, cfg map[string]any, opts ...reconcilers.Option) map[string]string {
	t.Helper()
	shard := map[string]string{"test": strings.ToLower(rand.String(6))}
	raw, _ := json.Marshal(cfg)
	def := blobcsi.Definition(blobcsi.WithHTTPClient(&http.Client{Transport: w}))
	testhost.Start(t, env, testhost.Plugin{Def: def, Options: append([]reconcilers.Option{
		reconcilers.WithDefaults(raw), reconcilers.WithShard(labels.SelectorFromSet(shard)), reconcilers.WithResync(time.Hour)}, opts...)})
	return shard
}

// instance is one storage instance on w's Azurite with creds.
func (w *oauthWorld) instance(creds map[string]any) map[string]any {
	return map[string]any{"name": "fdi", "classification": "unclassified", "account": w.azurite.Account,
		"blobEndpoint": w.azurite.BlobURL, "credentials": creds, "default": true}
}

// container reads a container's metadata with the shared key: what the
// plugin made, seen apart from the plugin's own credentials.
func (w *oauthWorld) container(t *testing.T, name string) (map[string]string, bool) {
	t.Helper()
	cred, err := service.NewSharedKeyCredential(w.azurite.Account, w.azurite.Key)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.NewClientWithSharedKeyCredential(w.azurite.BlobURL+"/", cred,
		&service.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: w.azurite.HTTPClient}})
	if err != nil {
		t.Fatal(err)
	}
	props, err := svc.NewContainerClient(name).GetProperties(t.Context(), &container.GetPropertiesOptions{})
	if err != nil {
		return nil, false
	}
	md := map[string]string{}
	for k, v := range props.Metadata {
		md[strings.ToLower(k)] = *v
	}
	return md, true
}

// principalSecret stores a principal's client secret in the cluster.
func principalSecret(t *testing.T, name, value string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: systemNS},
		StringData: map[string]string{blobcsi.SecretSPNClientSecret: value}}
	if err := env.Client.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), s) }) //nolint:forbidigo // cleanups run after t.Context is canceled
}

// TestServicePrincipalCreatesContainers: an instance whose credentials are
// a service principal gets a token from Microsoft Entra ID (the local
// stand-in) with the client secret from the principal's Secret, and creates
// the Profile's container in Azurite with that bearer token, proof included;
// its volumes mount with the principal; Revoke with retention Delete deletes
// the container with the same token. A wrong secret creates nothing.
func TestServicePrincipalCreatesContainers(t *testing.T) {
	t.Parallel()
	w := startOAuth(t)
	clientID, tenant := "fdi-"+rand.String(8), "tenant-"+rand.String(6)
	secretName, secretValue := unique("sp-fdi"), rand.String(32)
	principalSecret(t, secretName, secretValue)
	w.aad.AddClientSecret(clientID, secretValue)
	cfg := map[string]any{
		"storage": []any{w.instance(map[string]any{"type": "ServicePrincipal", "principal": "sp-fdi"})},
		"principals": map[string]any{"sp-fdi": map[string]any{"clientID": clientID, "tenantID": tenant,
			"secret": map[string]any{"name": secretName, "namespace": systemNS}, "aadEndpoint": w.aad.URL}},
		"deleteRecord": map[string]any{"name": unique("deletes")},
	}
	shard := w.start(t, cfg, reconcilers.WithRetention(plugins.RetentionDelete))
	name := unique("spn")
	testhost.NewProfile(t, env.Client, name, shard, blobPlugin())
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

	md, ok := w.container(t, name)
	if !ok {
		t.Fatalf("container %s is not in Azurite", name)
	}
	want := map[string]string{blobcsi.MetaPlugin: blobcsi.Kind, blobcsi.MetaProfile: name, blobcsi.MetaProfileUID: profileUID(t, name)}
	if diff := cmp.Diff(want, md); diff != "" {
		t.Errorf("container metadata (-want +got):\n%s", diff)
	}
	t.Logf("Azurite %s holds container %s with metadata %v", w.azurite.BlobURL, name, md)

	reqs := w.aad.Requests()
	wantReq := testenv.TokenRequest{Tenant: tenant, ClientID: clientID, Scope: "https://storage.azure.com/.default offline_access openid profile",
		Proof: "client_secret:" + testenv.Digest(secretValue), Issued: true}
	if len(reqs) == 0 {
		t.Fatal("the token endpoint was not asked for a token")
	}
	if diff := cmp.Diff(wantReq, reqs[0], scopeHas("https://storage.azure.com/.default")); diff != "" {
		t.Errorf("token request (-want +got):\n%s", diff)
	}
	for _, r := range reqs {
		t.Logf("token endpoint: %s", r)
	}
	sent := w.requests()
	if !slices.Contains(sent, "PUT azurite /"+w.azurite.Account+"/"+name+" auth=Bearer") {
		t.Errorf("the container was not created with a bearer token; requests: %q", sent)
	}
	for _, r := range sent {
		t.Logf("sent: %s", r)
	}

	v, err := pv(t, name+".fdi")
	if err != nil {
		t.Fatal(err)
	}
	gotAttrs := v.Spec.CSI.VolumeAttributes
	for k, want := range map[string]string{blobcsi.AttrAuthType: blobcsi.AuthTypeSPN, blobcsi.AttrSPNClientID: clientID,
		blobcsi.AttrSPNTenantID: tenant, blobcsi.AttrAADEndpoint: w.aad.URL} {
		if gotAttrs[k] != want {
			t.Errorf("PV attribute %s = %q, want %q", k, gotAttrs[k], want)
		}
	}
	if ref := v.Spec.CSI.NodeStageSecretRef; ref == nil || ref.Name != secretName || ref.Namespace != systemNS {
		t.Errorf("node-stage Secret = %+v, want %s/%s", ref, systemNS, secretName)
	}

	t.Run("revoke with retention Delete deletes the container with the same token", func(t *testing.T) {
		testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = nil })
		testhost.Eventually(t, time.Minute, func() (bool, string) {
			_, ok := w.container(t, name)
			return !ok, "container " + name + " still exists"
		})
		sent := w.requests()
		if !slices.ContainsFunc(sent, func(r string) bool {
			return strings.HasPrefix(r, "DELETE azurite /"+w.azurite.Account+"/"+name) && strings.HasSuffix(r, " auth=Bearer")
		}) {
			t.Errorf("the container was not deleted with a bearer token; requests: %q", sent)
		}
		for _, r := range sent {
			t.Logf("sent: %s", r)
		}
		// One credential per identity: its token served both passes.
		if reqs := w.aad.Requests(); len(reqs) != 1 {
			t.Errorf("token requests = %d, want 1: %v", len(reqs), reqs)
		}
	})

	t.Run("a secret the endpoint refuses creates nothing and says so", func(t *testing.T) {
		other := unique("sp-wrong")
		principalSecret(t, other, rand.String(32))
		cfg := map[string]any{
			"storage": []any{w.instance(map[string]any{"type": "ServicePrincipal", "principal": "sp-wrong"})},
			"principals": map[string]any{"sp-wrong": map[string]any{"clientID": clientID, "tenantID": tenant,
				"secret": map[string]any{"name": other, "namespace": systemNS}, "aadEndpoint": w.aad.URL}},
			"deleteRecord": map[string]any{"name": unique("deletes")},
		}
		shard := w.start(t, cfg)
		name := unique("spn-wrong")
		testhost.NewProfile(t, env.Client, name, shard, blobPlugin())
		c := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "AzureBlob")
		if strings.Contains(c.Message, secretValue) {
			t.Error("the condition carries a client secret")
		}
		if _, ok := w.container(t, name); ok {
			t.Errorf("container %s was made with a refused secret", name)
		}
		t.Logf("condition: %s", c.Message)
	})
}

// scopeHas compares token requests with the scope reduced to whether it
// asks for storage: MSAL adds scopes of its own.
func scopeHas(scope string) cmp.Option {
	return cmp.Transformer("scope", func(r testenv.TokenRequest) testenv.TokenRequest {
		r.Scope = strings.Join(slices.DeleteFunc(strings.Fields(r.Scope), func(s string) bool { return s != scope }), " ")
		return r
	})
}

// TestWorkloadIdentityCreatesContainers: an instance whose credentials are
// the host's workload identity presents the projected token (a file the
// test writes) as a client assertion, and creates the container with the
// bearer token it gets; its volumes mount with the principal it names.
func TestWorkloadIdentityCreatesContainers(t *testing.T) {
	t.Parallel()
	w := startOAuth(t)
	clientID, tenant := "host-"+rand.String(8), "tenant-"+rand.String(6)
	tokenFile := filepath.Join(t.TempDir(), "token")
	assertion := "sa-token-" + rand.String(24)
	if err := os.WriteFile(tokenFile, []byte(assertion), 0o600); err != nil {
		t.Fatal(err)
	}
	w.aad.AddFederated(clientID, assertion)
	cfg := map[string]any{
		"storage": []any{w.instance(map[string]any{"type": "WorkloadIdentity", "principal": "sp-mount",
			"workloadIdentity": map[string]any{"clientID": clientID, "tenantID": tenant, "tokenFile": tokenFile, "authorityHost": w.aad.URL}})},
		"principals":   map[string]any{"sp-mount": principal("sp-mount")},
		"deleteRecord": map[string]any{"name": unique("deletes")},
	}
	shard := w.start(t, cfg)
	name := unique("wi")
	testhost.NewProfile(t, env.Client, name, shard, blobPlugin())
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

	md, ok := w.container(t, name)
	if !ok || md[blobcsi.MetaProfileUID] != profileUID(t, name) {
		t.Fatalf("container %s: present %t, metadata %v", name, ok, md)
	}
	reqs := w.aad.Requests()
	wantReq := testenv.TokenRequest{Tenant: tenant, ClientID: clientID, Scope: "https://storage.azure.com/.default",
		Proof: "client_assertion:" + testenv.Digest(assertion), Issued: true}
	if len(reqs) == 0 {
		t.Fatal("the token endpoint was not asked for a token")
	}
	if diff := cmp.Diff(wantReq, reqs[0], scopeHas("https://storage.azure.com/.default")); diff != "" {
		t.Errorf("token request (-want +got):\n%s", diff)
	}
	for _, r := range reqs {
		t.Logf("token endpoint: %s", r)
	}
	if v, err := pv(t, name+".fdi"); err != nil || v.Spec.CSI.VolumeAttributes[blobcsi.AttrSPNClientID] != "sp-mount-client" {
		t.Errorf("PV %s-fdi: %v, want it mounted by principal sp-mount", name, err)
	}
}

// TestUnknownPrincipalFailsOnlyItsVolume: a grant that names a principal
// the host does not have fails that volume on the condition; the Profile's
// other volumes are written, and a volume whose grant changes to such a
// principal is kept as it was, not deleted.
func TestUnknownPrincipalFailsOnlyItsVolume(t *testing.T) {
	t.Parallel()
	a := unique("team-a")
	cmName := unique("spn-grants")
	doc := func(xSPN string) map[string]string {
		b, _ := json.Marshal([]map[string]any{
			{"bucketName": "census-ok", "pvName": "census-ok", "readers": []string{a}, "spn": "sp-census"},
			{"bucketName": "census-x", "pvName": "census-x", "readers": []string{a}, "spn": xSPN},
		})
		return map[string]string{"buckets": string(b)}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName, Namespace: systemNS}, Data: doc("sp")}
	if err := env.Client.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cm) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	shard := newShard()
	testhost.NewProfile(t, env.Client, a, shard, blobPlugin())
	startShard(t, shard, configMapSourceConfig(t, cmName), reconcilers.WithResync(time.Hour))
	want := sharedVolumes(a, "census-ok", "census-x")
	waitVolumes(t, a, want, time.Minute)
	testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionTrue, "")

	cm.Data = doc("sp-nobody")
	if err := env.Client.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	cond := testhost.WaitCondition(t, env.Client, a, condType, plugins.ConditionFalse, `names the service principal "sp-nobody"`)
	t.Logf("condition: %s", cond.Message)
	if strings.Contains(cond.Message, "census-ok") {
		t.Errorf("the condition blames a volume whose principal is known: %s", cond.Message)
	}
	keptFor(t, 2*time.Second, a, want)
	v, err := pv(t, a+".census-x")
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Spec.CSI.VolumeAttributes[blobcsi.AttrSPNClientID]; got != "sp-client" {
		t.Errorf("the kept volume's principal = %q, want the earlier sp-client", got)
	}
}

// TestAccountKeySecretWithoutItsAccountName: a credentials Secret that holds
// the account key alone (the driver then takes the account from the
// volume's attributes) creates containers as the instance's account.
func TestAccountKeySecretWithoutItsAccountName(t *testing.T) {
	t.Parallel()
	g := serversOf(t)
	keyOnly := unique("key-only")
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: keyOnly, Namespace: systemNS},
		StringData: map[string]string{blobcsi.SecretAccountKey: g.azurite.Key}}
	if err := env.Client.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), s) }) //nolint:forbidigo // cleanups run after t.Context is canceled
	putGrants(t, grantsDoc{Classifications: []string{"unclassified"}})
	storage := []any{map[string]any{"name": "standard", "classification": "unclassified", "account": g.azurite.Account,
		"blobEndpoint": g.azurite.BlobURL, "capacity": "50Gi", "default": true,
		"credentials": map[string]any{"secretName": keyOnly, "secretNamespace": systemNS}}}
	h := start(t, hostConfig(t, map[string]any{"storage": storage}), reconcilers.WithResync(time.Hour))
	a := unique("team-a")
	h.profile(t, a, blobPlugin())
	waitClaims(t, a, map[string]string{"standard": "ReadWriteMany"})
	if md := metadataOf(t, a); md[strings.ToLower(blobcsi.MetaProfile)] != a {
		t.Errorf("container %s's metadata = %v, want it made for %s", a, md, a)
	}
}
