package expose_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	networkingv1 "istio.io/api/networking/v1"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/expose"
	"github.com/profilekit/profilekit/reconcilers"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{Istio: true}) }

const condType = "ExposeReady"

// noEnv keeps the tests independent of the environment they run in.
func noEnv(string) (string, bool) { return "", false }

func exposePlugin(t *testing.T, apps ...expose.App) kubeflowv1.Plugin {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"apps": apps})
	if err != nil {
		t.Fatal(err)
	}
	return kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: expose.Kind}, Spec: &runtime.RawExtension{Raw: raw}}
}

func setPlugins(t *testing.T, name string, ps ...kubeflowv1.Plugin) {
	t.Helper()
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) { p.Spec.Plugins = ps })
}

func getVS(ns, name string) (*istionetworkingv1.VirtualService, error) {
	var vs istionetworkingv1.VirtualService
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &vs) //nolint:forbidigo // no *testing.T in reach
	return &vs, err
}

// waitSpec waits until the VirtualService ns/name holds want.
func waitSpec(t *testing.T, ns, name string, want *networkingv1.VirtualService) *istionetworkingv1.VirtualService {
	t.Helper()
	var got *istionetworkingv1.VirtualService
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		vs, err := getVS(ns, name)
		if err != nil {
			return false, err.Error()
		}
		got = vs
		d := cmp.Diff(want, &vs.Spec, protocmp.Transform())
		return d == "", "spec (-want +got):\n" + d
	})
	return got
}

var rstudio = expose.App{
	Name:              "rstudio",
	Service:           "rstudio",
	Port:              8787,
	RewriteToRoot:     true,
	DashboardRedirect: true,
	RequestHeaders: &expose.HeaderOperations{
		Set:    map[string]string{"X-RStudio-Root-Path": `{{ httpPathPrefix "rstudio" }}`},
		Add:    map[string]string{"X-Forwarded-Prefix": `{{ httpPathPrefix "rstudio" }}`},
		Remove: []string{"Cookie"},
	},
}

var docs = expose.App{Name: "docs", Prefix: "documentation", Service: "docs-web", Port: 80}

func TestExposeLifecycle(t *testing.T) {
	h := testhost.Start(t, env, testhost.Plugin{
		Def:     expose.DefinitionFromEnv(noEnv),
		Options: []reconcilers.Option{reconcilers.WithResync(300 * time.Millisecond)},
	})
	name := "expose-" + rand.String(5)
	p := testhost.NewProfile(t, env.Client, name, nil, exposePlugin(t, rstudio, docs))

	cfg := expose.NewConfig()
	cfg.Apps = []expose.App{rstudio, docs}
	want, err := expose.Build(cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	vs := waitSpec(t, name, "rstudio", want[0].Spec)
	waitSpec(t, name, "docs", want[1].Spec)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "2 objects in sync")

	t.Run("the API server keeps what we render", func(t *testing.T) {
		// A spot check by value, so that a wrong builder cannot hide
		// behind comparing the builder with itself.
		route := vs.Spec.Http[1]
		if got, want := route.Match[0].Uri.GetPrefix(), "/rstudio/"+name+"/"; got != want {
			t.Errorf("match prefix = %q, want %q", got, want)
		}
		if got, want := route.Headers.Request.Set["X-RStudio-Root-Path"], "/rstudio/"+name+"/"; got != want {
			t.Errorf("X-RStudio-Root-Path = %q, want %q", got, want)
		}
		if got, want := route.Route[0].Destination.Host, "rstudio."+name+".svc.cluster.local"; got != want {
			t.Errorf("destination = %q, want %q", got, want)
		}
		if got := vs.Spec.Http[0].Redirect.GetUri(); got != "/rstudio/"+name+"/" {
			t.Errorf("dashboard redirect = %q", got)
		}
		if diff := cmp.Diff(plugins.OwnershipLabels(expose.Kind, name), vs.Labels); diff != "" {
			t.Errorf("labels (-want +got):\n%s", diff)
		}
		if len(vs.OwnerReferences) != 1 || vs.OwnerReferences[0].UID != p.UID {
			t.Errorf("owner references = %+v, want one to Profile %s", vs.OwnerReferences, p.UID)
		}
	})

	t.Run("resync with nothing changed sends no mutating request", func(t *testing.T) {
		if got := h.ResyncWrites(t, 3, expose.Kind); len(got) != 0 {
			t.Errorf("mutating requests on resync = %v, want none", got)
		}
	})

	t.Run("a hand edit is put back", func(t *testing.T) {
		vs, err := getVS(name, "docs")
		if err != nil {
			t.Fatal(err)
		}
		vs.Spec.Http[0].Route[0].Destination.Port.Number = 9999
		if err := env.Client.Update(t.Context(), vs); err != nil {
			t.Fatal(err)
		}
		waitSpec(t, name, "docs", want[1].Spec)
	})

	t.Run("an app the spec drops is deleted", func(t *testing.T) {
		setPlugins(t, name, exposePlugin(t, docs))
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			_, err := getVS(name, "rstudio")
			return apierrors.IsNotFound(err), fmt.Sprintf("rstudio still there (%v)", err)
		})
		if _, err := getVS(name, "docs"); err != nil {
			t.Errorf("docs: %v", err)
		}
	})
}

func TestInvalidHeaderTemplateIsReportedAndChangesNothing(t *testing.T) {
	testhost.Start(t, env, testhost.Plugin{Def: expose.DefinitionFromEnv(noEnv)})
	name := "badtpl-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, exposePlugin(t, docs))
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	before, err := getVS(name, "docs")
	if err != nil {
		t.Fatal(err)
	}

	broken := docs
	broken.RequestHeaders = &expose.HeaderOperations{Set: map[string]string{"X-Prefix": `{{ httpPathPrefix "docs" }`}}
	setPlugins(t, name, exposePlugin(t, broken))

	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, plugins.ReasonInvalidSpec)
	for _, part := range []string{"apps[docs]: requestHeaders", "set[X-Prefix]", strconv.Quote(`{{ httpPathPrefix "docs" }`), `unexpected "}" in operand`} {
		if !strings.Contains(cond.Message, part) {
			t.Errorf("condition message %q does not contain %q", cond.Message, part)
		}
	}
	time.Sleep(time.Second)
	after, err := getVS(name, "docs")
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("VirtualService changed after a broken template: resourceVersion %s -> %s", before.ResourceVersion, after.ResourceVersion)
	}

	t.Run("an unknown route id is reported the same way", func(t *testing.T) {
		broken.RequestHeaders = &expose.HeaderOperations{Set: map[string]string{"X-Prefix": `{{ httpPathPrefix "nope" }}`}}
		setPlugins(t, name, exposePlugin(t, broken))
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, `no route with id "nope"`)
	})

	t.Run("fixing the template serves the Profile again", func(t *testing.T) {
		fixed := docs
		fixed.RequestHeaders = &expose.HeaderOperations{Set: map[string]string{"X-Prefix": `{{ httpPathPrefix "docs" }}`}}
		setPlugins(t, name, exposePlugin(t, fixed))
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			vs, err := getVS(name, "docs")
			if err != nil {
				return false, err.Error()
			}
			got := vs.Spec.Http[0].GetHeaders().GetRequest().GetSet()["X-Prefix"]
			return got == "/documentation/"+name+"/", fmt.Sprintf("X-Prefix = %q", got)
		})
	})
}

func TestHostConfigWinsOverEnvironment(t *testing.T) {
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{
			expose.EnvGateway:       "istio-ingress/from-env",
			expose.EnvHost:          "env.example.org",
			expose.EnvClusterDomain: "corp.internal",
		}[k]
		return v, ok
	}
	testhost.Start(t, env, testhost.Plugin{
		Def:     expose.DefinitionFromEnv(lookup),
		Options: []reconcilers.Option{reconcilers.WithDefaults([]byte(`{"hosts":["kubeflow.example.org"]}`))},
	})
	name := "envcfg-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil, exposePlugin(t, docs))
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		vs, err := getVS(name, "docs")
		if err != nil {
			return false, err.Error()
		}
		got := fmt.Sprintf("gateways=%v hosts=%v destination=%s", vs.Spec.Gateways, vs.Spec.Hosts, vs.Spec.Http[0].Route[0].Destination.Host)
		want := fmt.Sprintf("gateways=[istio-ingress/from-env] hosts=[kubeflow.example.org] destination=docs-web.%s.svc.corp.internal", name)
		return got == want, got
	})
}

// TestWorkspaceRoutesAreAcceptedByTheAPIServer stores the Notebooks 2.0
// example's routes in a VirtualService, so the real CRD schema judges them.
func TestWorkspaceRoutesAreAcceptedByTheAPIServer(t *testing.T) {
	name := "ws-" + rand.String(5)
	testhost.NewProfile(t, env.Client, name, nil)
	ws := notebooksExample
	ws.Namespace = name
	routes, err := expose.WorkspaceHTTPRoutes(ws, "cluster.local")
	if err != nil {
		t.Fatal(err)
	}
	vs := &istionetworkingv1.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Name: "my-workspace", Namespace: name},
		Spec:       networkingv1.VirtualService{Hosts: []string{"*"}, Gateways: []string{"kubeflow/kubeflow-gateway"}, Http: routes},
	}
	if err := env.Client.Create(t.Context(), vs); err != nil {
		t.Fatalf("create: %v", err)
	}
	got, err := getVS(name, "my-workspace")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(routes, got.Spec.Http, protocmp.Transform()); diff != "" {
		t.Errorf("stored routes (-sent +stored):\n%s", diff)
	}
}
