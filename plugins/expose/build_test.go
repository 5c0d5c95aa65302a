package expose_test

import (
	"flag"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	networkingv1 "istio.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/expose"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func prefixMatch(p string) []*networkingv1.HTTPMatchRequest {
	return []*networkingv1.HTTPMatchRequest{{Uri: &networkingv1.StringMatch{MatchType: &networkingv1.StringMatch_Prefix{Prefix: p}}}}
}

func destination(host string, port uint32) []*networkingv1.HTTPRouteDestination {
	return []*networkingv1.HTTPRouteDestination{{Destination: &networkingv1.Destination{Host: host, Port: &networkingv1.PortSelector{Number: port}}}}
}

func TestHTTPRoute(t *testing.T) {
	base := expose.Route{Name: "app", PathPrefix: "/app/team-a/", Service: "web", Namespace: "team-a", Port: 8080}
	prefixes := expose.PathPrefixes{"app": "/app/team-a/", "other": "/other/team-a/"}
	tests := []struct {
		reason  string
		route   func(r expose.Route) expose.Route
		domain  string
		want    *networkingv1.HTTPRoute
		wantErr string
	}{
		{
			reason: "a plain route matches the prefix and keeps the path",
			route:  func(r expose.Route) expose.Route { return r },
			domain: "cluster.local",
			want:   &networkingv1.HTTPRoute{Name: "app", Match: prefixMatch("/app/team-a/"), Route: destination("web.team-a.svc.cluster.local", 8080)},
		},
		{
			reason: "the cluster domain completes the destination host",
			route:  func(r expose.Route) expose.Route { return r },
			domain: "corp.internal",
			want:   &networkingv1.HTTPRoute{Name: "app", Match: prefixMatch("/app/team-a/"), Route: destination("web.team-a.svc.corp.internal", 8080)},
		},
		{
			reason: "rewriteToRoot replaces the prefix with /",
			route:  func(r expose.Route) expose.Route { r.RewriteToRoot = true; return r },
			domain: "cluster.local",
			want: &networkingv1.HTTPRoute{Name: "app", Match: prefixMatch("/app/team-a/"), Rewrite: &networkingv1.HTTPRewrite{Uri: "/"},
				Route: destination("web.team-a.svc.cluster.local", 8080)},
		},
		{
			reason: "set and add values are templates; remove is sorted and deduplicated; literal values pass through",
			route: func(r expose.Route) expose.Route {
				r.RequestHeaders = &expose.HeaderOperations{
					Set:    map[string]string{"X-Root": `{{ httpPathPrefix "app" }}`, "X-Literal": "plain"},
					Add:    map[string]string{"X-Other": `prefix={{ httpPathPrefix "other" }}`},
					Remove: []string{"X-B", "X-A", "X-B"},
				}
				return r
			},
			domain: "cluster.local",
			want: &networkingv1.HTTPRoute{Name: "app", Match: prefixMatch("/app/team-a/"), Route: destination("web.team-a.svc.cluster.local", 8080),
				Headers: &networkingv1.Headers{Request: &networkingv1.Headers_HeaderOperations{
					Set:    map[string]string{"X-Root": "/app/team-a/", "X-Literal": "plain"},
					Add:    map[string]string{"X-Other": "prefix=/other/team-a/"},
					Remove: []string{"X-A", "X-B"},
				}}},
		},
		{
			reason: "empty header operations add no headers block",
			route:  func(r expose.Route) expose.Route { r.RequestHeaders = &expose.HeaderOperations{}; return r },
			domain: "cluster.local",
			want:   &networkingv1.HTTPRoute{Name: "app", Match: prefixMatch("/app/team-a/"), Route: destination("web.team-a.svc.cluster.local", 8080)},
		},
		{
			reason: "a template that does not parse names the header and the parser's error",
			route: func(r expose.Route) expose.Route {
				r.RequestHeaders = &expose.HeaderOperations{Set: map[string]string{"X-Root": `{{ httpPathPrefix "app" }`}}
				return r
			},
			domain:  "cluster.local",
			wantErr: `requestHeaders: parse header template "{{ httpPathPrefix \"app\" }": template: set[X-Root]:1: unexpected "}" in operand`,
		},
		{
			reason: "single quotes are not Go template strings",
			route: func(r expose.Route) expose.Route {
				r.RequestHeaders = &expose.HeaderOperations{Add: map[string]string{"X-Root": `{{ httpPathPrefix 'app' }}`}}
				return r
			},
			domain:  "cluster.local",
			wantErr: `template: add[X-Root]:1: malformed character constant`,
		},
		{
			reason: "an unknown id fails at execution and lists the known ones",
			route: func(r expose.Route) expose.Route {
				r.RequestHeaders = &expose.HeaderOperations{Set: map[string]string{"X-Root": `{{ httpPathPrefix "nope" }}`}}
				return r
			},
			domain:  "cluster.local",
			wantErr: `no route with id "nope" (known: app, other)`,
		},
		{
			reason: "data fields do not exist, so they fail instead of rendering <no value>",
			route: func(r expose.Route) expose.Route {
				r.RequestHeaders = &expose.HeaderOperations{Set: map[string]string{"X-Root": `{{ .PathPrefix }}`}}
				return r
			},
			domain:  "cluster.local",
			wantErr: `can't evaluate field PathPrefix`,
		},
		{
			reason: "an unknown function fails",
			route: func(r expose.Route) expose.Route {
				r.RequestHeaders = &expose.HeaderOperations{Set: map[string]string{"X-Root": `{{ env "HOME" }}`}}
				return r
			},
			domain:  "cluster.local",
			wantErr: `function "env" not defined`,
		},
		{
			reason: "a rendered line break would split the header, so it is refused",
			route: func(r expose.Route) expose.Route {
				r.RequestHeaders = &expose.HeaderOperations{Set: map[string]string{"X-Root": "a{{ \"\\n\" }}b"}}
				return r
			},
			domain:  "cluster.local",
			wantErr: `holds a line break`,
		},
		{
			reason: "if and with may choose what to print",
			route: func(r expose.Route) expose.Route {
				r.RequestHeaders = &expose.HeaderOperations{Set: map[string]string{"X-Root": `{{ with httpPathPrefix "app" }}{{ if . }}{{ . }}{{ end }}{{ end }}`}}
				return r
			},
			domain: "cluster.local",
			want: &networkingv1.HTTPRoute{Name: "app", Match: prefixMatch("/app/team-a/"), Route: destination("web.team-a.svc.cluster.local", 8080),
				Headers: &networkingv1.Headers{Request: &networkingv1.Headers_HeaderOperations{Set: map[string]string{"X-Root": "/app/team-a/"}}}},
		},
		{
			reason: "a loop could keep a worker busy, so range is refused before it runs",
			route: func(r expose.Route) expose.Route {
				r.RequestHeaders = &expose.HeaderOperations{Set: map[string]string{"X-Root": `{{ range 1000000000000 }}{{ end }}`}}
				return r
			},
			domain:  "cluster.local",
			wantErr: `set[X-Root]: range is not allowed`,
		},
		{
			reason: "a range hidden in an if is refused too",
			route: func(r expose.Route) expose.Route {
				r.RequestHeaders = &expose.HeaderOperations{Set: map[string]string{"X-Root": `{{ if true }}{{ range 10 }}x{{ end }}{{ end }}`}}
				return r
			},
			domain:  "cluster.local",
			wantErr: `range is not allowed`,
		},
		{
			reason: "templates that call templates could grow without bound, so define is refused",
			route: func(r expose.Route) expose.Route {
				r.RequestHeaders = &expose.HeaderOperations{Set: map[string]string{"X-Root": `{{ define "a" }}aa{{ end }}{{ template "a" }}`}}
				return r
			},
			domain:  "cluster.local",
			wantErr: `define and block are not allowed`,
		},
		{
			reason: "output beyond the bound stops the template",
			route: func(r expose.Route) expose.Route {
				r.RequestHeaders = &expose.HeaderOperations{Set: map[string]string{"X-Root": `{{ printf "%099999d" 1 }}`}}
				return r
			},
			domain:  "cluster.local",
			wantErr: `rendered value is longer than 8192 bytes`,
		},
		{
			reason: "every broken header is reported, not only the first",
			route: func(r expose.Route) expose.Route {
				r.RequestHeaders = &expose.HeaderOperations{
					Set: map[string]string{"X-One": `{{`},
					Add: map[string]string{"X-Two": `{{ httpPathPrefix "nope" }}`},
				}
				return r
			},
			domain:  "cluster.local",
			wantErr: "set[X-One]:1: unclosed action\nexecute header template",
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got, err := expose.HTTPRoute(tt.route(base), tt.domain, prefixes)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if got != nil {
					t.Errorf("route = %v, want none with an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("route (-want +got):\n%s", diff)
			}
		})
	}
}

func profile(name string, ps ...kubeflowv1.Plugin) *kubeflowv1.Profile {
	return &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kubeflowv1.ProfileSpec{Plugins: ps}}
}

func TestBuild(t *testing.T) {
	tests := []struct {
		reason string
		apps   []expose.App
		want   []*networkingv1.VirtualService
		names  []string
	}{
		{
			reason: "no apps, no VirtualServices",
		},
		{
			reason: "the prefix defaults to the name, the object is named after the app",
			apps:   []expose.App{{Name: "tensorboard", Service: "tb", Port: 6006}},
			names:  []string{"tensorboard"},
			want: []*networkingv1.VirtualService{{
				Hosts: []string{"*"}, Gateways: []string{"kubeflow/kubeflow-gateway"},
				Http: []*networkingv1.HTTPRoute{{Name: "tensorboard", Match: prefixMatch("/tensorboard/team-a/"), Route: destination("tb.team-a.svc.cluster.local", 6006)}},
			}},
		},
		{
			reason: "the dashboard redirect comes first and matches only this namespace's query",
			apps:   []expose.App{{Name: "docs", Prefix: "documentation", Service: "web", Port: 80, DashboardRedirect: true}},
			names:  []string{"docs"},
			want: []*networkingv1.VirtualService{{
				Hosts: []string{"*"}, Gateways: []string{"kubeflow/kubeflow-gateway"},
				Http: []*networkingv1.HTTPRoute{
					{
						Name: "docs-dashboard",
						Match: []*networkingv1.HTTPMatchRequest{{
							Uri:         &networkingv1.StringMatch{MatchType: &networkingv1.StringMatch_Exact{Exact: "/documentation/"}},
							QueryParams: map[string]*networkingv1.StringMatch{"ns": {MatchType: &networkingv1.StringMatch_Exact{Exact: "team-a"}}},
						}},
						Redirect: &networkingv1.HTTPRedirect{Uri: "/documentation/team-a/"},
					},
					{Name: "docs", Match: prefixMatch("/documentation/team-a/"), Route: destination("web.team-a.svc.cluster.local", 80)},
				},
			}},
		},
		{
			reason: "one app's header may name another app's prefix",
			apps: []expose.App{
				{Name: "a", Service: "a", Port: 1, RequestHeaders: &expose.HeaderOperations{Set: map[string]string{"X-B": `{{ httpPathPrefix "b" }}`}}},
				{Name: "b", Service: "b", Port: 2},
			},
			names: []string{"a", "b"},
			want: []*networkingv1.VirtualService{
				{
					Hosts: []string{"*"}, Gateways: []string{"kubeflow/kubeflow-gateway"},
					Http: []*networkingv1.HTTPRoute{{Name: "a", Match: prefixMatch("/a/team-a/"), Route: destination("a.team-a.svc.cluster.local", 1),
						Headers: &networkingv1.Headers{Request: &networkingv1.Headers_HeaderOperations{Set: map[string]string{"X-B": "/b/team-a/"}}}}},
				},
				{
					Hosts: []string{"*"}, Gateways: []string{"kubeflow/kubeflow-gateway"},
					Http: []*networkingv1.HTTPRoute{{Name: "b", Match: prefixMatch("/b/team-a/"), Route: destination("b.team-a.svc.cluster.local", 2)}},
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			cfg := expose.NewConfig()
			cfg.Apps = tt.apps
			vss, err := expose.Build(cfg, profile("team-a"))
			if err != nil {
				t.Fatal(err)
			}
			var got []*networkingv1.VirtualService
			var names []string
			for _, vs := range vss {
				if *vs.Namespace != "team-a" {
					t.Errorf("%s is in namespace %s, want team-a", *vs.Name, *vs.Namespace)
				}
				names = append(names, *vs.Name)
				got = append(got, vs.Spec)
			}
			if diff := cmp.Diff(tt.names, names); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("specs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildReportsTemplateErrorsAsTerminal(t *testing.T) {
	cfg := expose.NewConfig()
	cfg.Apps = []expose.App{{Name: "a", Service: "a", Port: 1, RequestHeaders: &expose.HeaderOperations{Set: map[string]string{"X": `{{ httpPathPrefix "z" }}`}}}}
	_, err := expose.Build(cfg, profile("team-a"))
	if !plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != plugins.ReasonInvalidSpec {
		t.Fatalf("error = %v, want a terminal InvalidSpec", err)
	}
}
