package expose_test

// This file holds the tests of the Notebooks 2.0 workspace routes.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	networkingv1 "istio.io/api/networking/v1"

	"github.com/profilekit/profilekit/plugins/expose"
)

// notebooksExample is the Kubeflow Notebooks 2.0 design's example of a
// workspace with two ports: JupyterLab, which serves under its own path
// prefix, and RStudio, which wants the prefix removed and told through the
// X-RStudio-Root-Path header.
var notebooksExample = expose.Workspace{
	Namespace: "team-a",
	Name:      "my-workspace",
	Service:   "ws-my-workspace",
	Ports: []expose.WorkspacePort{
		{ID: "jupyterlab", Port: 8888, HTTPProxy: &expose.HTTPProxy{RemovePathPrefix: false}},
		{ID: "rstudio", Port: 8787, HTTPProxy: &expose.HTTPProxy{
			RemovePathPrefix: true,
			RequestHeaders:   &expose.HeaderOperations{Set: map[string]string{"X-RStudio-Root-Path": `{{ httpPathPrefix "rstudio" }}`}},
		}},
	},
}

// TestWorkspaceHTTPRoutesGolden renders the Notebooks 2.0 example and compares
// it with testdata/notebooks2-workspace.golden.json (go test -update rewrites it).
func TestWorkspaceHTTPRoutesGolden(t *testing.T) {
	routes, err := expose.WorkspaceHTTPRoutes(notebooksExample, "cluster.local")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(routes)
	if err != nil {
		t.Fatal(err)
	}
	var got any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "notebooks2-workspace.golden.json")
	if *update {
		pretty, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(pretty, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want any
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("routes (-golden +got):\n%s", diff)
	}
}

func TestWorkspaceHTTPRoutes(t *testing.T) {
	ws := func(ports ...expose.WorkspacePort) expose.Workspace {
		return expose.Workspace{Namespace: "ns", Name: "ws", Service: "svc", Ports: ports}
	}
	tests := []struct {
		reason  string
		ws      expose.Workspace
		want    []*networkingv1.HTTPRoute
		wantErr string
	}{
		{
			reason: "no httpProxy keeps the path and the headers",
			ws:     ws(expose.WorkspacePort{ID: "code", Port: 8080}),
			want: []*networkingv1.HTTPRoute{{Name: "code", Match: prefixMatch("/workspace/connect/ns/ws/code/"),
				Route: destination("svc.ns.svc.cluster.local", 8080)}},
		},
		{
			reason: "removePathPrefix false keeps the path",
			ws:     ws(expose.WorkspacePort{ID: "code", Port: 8080, HTTPProxy: &expose.HTTPProxy{}}),
			want: []*networkingv1.HTTPRoute{{Name: "code", Match: prefixMatch("/workspace/connect/ns/ws/code/"),
				Route: destination("svc.ns.svc.cluster.local", 8080)}},
		},
		{
			reason: "removePathPrefix true rewrites to /",
			ws:     ws(expose.WorkspacePort{ID: "code", Port: 8080, HTTPProxy: &expose.HTTPProxy{RemovePathPrefix: true}}),
			want: []*networkingv1.HTTPRoute{{Name: "code", Match: prefixMatch("/workspace/connect/ns/ws/code/"),
				Rewrite: &networkingv1.HTTPRewrite{Uri: "/"}, Route: destination("svc.ns.svc.cluster.local", 8080)}},
		},
		{
			reason: "a broken template names the port and the header",
			ws: ws(expose.WorkspacePort{ID: "code", Port: 8080, HTTPProxy: &expose.HTTPProxy{
				RequestHeaders: &expose.HeaderOperations{Set: map[string]string{"X-P": `{{ httpPathPrefix "code" }`}},
			}}),
			wantErr: `port code: requestHeaders: parse header template`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got, err := expose.WorkspaceHTTPRoutes(tt.ws, "cluster.local")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("routes (-want +got):\n%s", diff)
			}
		})
	}
}
