package workloadidentity_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	iam "google.golang.org/api/iam/v1"
	"google.golang.org/api/option"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/internal/fakecloud"
	"github.com/profilekit/profilekit/plugins/plugintest"
	"github.com/profilekit/profilekit/plugins/workloadidentity"
)

// runAccounts are the two Google service accounts each run of the scenario
// has, as email suffixes after the run's namespace.
var runAccounts = []string{"-a@proj-123.iam.gserviceaccount.com", "-b@proj-123.iam.gserviceaccount.com"}

// runServiceAccounts are the Profile's service accounts the host lists:
// each account trusts two members per Profile.
var runServiceAccounts = []string{"default-editor", "default-viewer"}

// workloadIdentityScenario is the plugin, through the iam/v1 client,
// against the local Google IAM server: a Profile acts as one account of its
// own, moves to another (granted there, annotated, then taken off the
// first), and lets go. Each run has its own accounts, made by Setup with
// someone else's binding of the same role, which every write must keep, so
// that no plan sees another's members; on the first, an administrator has
// already let one of the Profile's service accounts act as it, a member
// the plugin records as foreign and leaves when it moves and lets go.
// Observe reads both accounts' policies and the annotation on each service
// account: a member granted twice, left behind or lost, or a foreign
// binding dropped, is a difference from the run without perturbation, and
// the administrator's member gone fails even the run without it.
func workloadIdentityScenario(t *testing.T) plugintest.Scenario {
	srv := fakecloud.NewGoogle(t)
	s, err := iam.NewService(t.Context(), option.WithEndpoint(srv.URL+"/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatalf("Google IAM client: %v", err)
	}
	var allowed []any
	for _, suffix := range runAccounts {
		allowed = append(allowed, map[string]any{"identity": "{{ .Namespace }}" + suffix})
	}
	defaults, err := json.Marshal(map[string]any{"serviceAccounts": runServiceAccounts, "allowedIdentities": allowed})
	if err != nil {
		t.Fatal(err)
	}
	resourceOf := func(namespace, suffix string) string {
		return workloadidentity.Resource("proj-123", namespace+suffix)
	}
	var touches []string
	for _, sa := range runServiceAccounts {
		touches = append(touches, "ServiceAccount <profile>/"+sa)
	}
	// What outlives the Profile: the annotations (in its namespace, which
	// goes with it), someone else's members and the administrator's.
	retained := []string{"annotation "}
	for _, suffix := range runAccounts {
		retained = append(retained, "policy <profile>"+suffix+" "+tokenCreator.Role+" ",
			"policy <profile>"+suffix+" "+workloadidentity.RoleWorkloadIdentityUser+" serviceAccount:proj-123.svc.id.goog[ops/runner]")
	}
	retained = append(retained, "policy <profile>"+runAccounts[0]+" "+workloadidentity.RoleWorkloadIdentityUser+" serviceAccount:proj-123.svc.id.goog[<profile>/default-viewer]")
	return plugintest.Scenario{
		Def:      workloadidentity.Definition(workloadidentity.NewIAM(s)),
		Defaults: defaults,
		Steps: []plugintest.Step{
			{Name: "act as an account", Spec: map[string]any{"gcpServiceAccount": "{{ .Profile }}" + runAccounts[0]}},
			{Name: "move to another", Spec: map[string]any{"gcpServiceAccount": "{{ .Profile }}" + runAccounts[1]}},
			{Name: "remove", Remove: true},
			{Name: "add again", Spec: map[string]any{"gcpServiceAccount": "{{ .Profile }}" + runAccounts[0]}},
			{Name: "delete the Profile", Delete: true},
		},
		Setup: func(ctx context.Context, c client.Client, namespace string) error {
			for i, suffix := range runAccounts {
				members := []string{"serviceAccount:proj-123.svc.id.goog[ops/runner]"}
				if i == 0 {
					// An administrator let the viewer act as the first
					// account before the plugin: never the plugin's to take.
					members = append(members, workloadidentity.Member("proj-123.svc.id.goog", namespace, "default-viewer"))
				}
				srv.AddAccount(resourceOf(namespace, suffix), fakecloud.GooglePolicy{Bindings: []fakecloud.GoogleBinding{
					tokenCreator,
					{Role: workloadidentity.RoleWorkloadIdentityUser, Members: members},
				}})
			}
			for _, sa := range runServiceAccounts {
				if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: sa}}); err != nil {
					return err
				}
			}
			return nil
		},
		Observe: func(ctx context.Context, namespace string) (map[string]string, error) {
			out := map[string]string{}
			for _, suffix := range runAccounts {
				// One key per member of each role, counting the bindings
				// that grant it: the order of members is not IAM's meaning,
				// and the etag changes with every write, even one that
				// changes nothing.
				held := map[string]int{}
				for _, b := range srv.Policy(resourceOf(namespace, suffix)).Bindings {
					for _, m := range b.Members {
						held["policy "+namespace+suffix+" "+b.Role+" "+m]++
					}
				}
				for k, n := range held {
					out[k] = fmt.Sprintf("granted %d times", n)
				}
			}
			// Whatever the step, the administrator's member stays while the
			// Profile does: the run without perturbation is held to that as
			// well. Once the Profile is deleted, a host that stopped before
			// it recorded the member as someone else's removes it with
			// every member of the namespace's (revocation fails closed).
			viewer := workloadidentity.Member("proj-123.svc.id.goog", namespace, "default-viewer")
			var p kubeflowv1.Profile
			if err := env.Client.Get(ctx, client.ObjectKey{Name: namespace}, &p); err != nil {
				return nil, err
			}
			if _, ok := out["policy "+namespace+runAccounts[0]+" "+workloadidentity.RoleWorkloadIdentityUser+" "+viewer]; !ok && p.DeletionTimestamp.IsZero() {
				return nil, fmt.Errorf("%s lost %s, which an administrator granted before the plugin", namespace+runAccounts[0], viewer)
			}
			for _, name := range runServiceAccounts {
				var sa corev1.ServiceAccount
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &sa); err != nil {
					return nil, err
				}
				if v, ok := sa.Annotations[workloadidentity.AnnotationGSA]; ok {
					out["annotation "+name] = v
				}
			}
			return out, nil
		},
		Grants: func(_ context.Context, namespace string) ([]string, error) {
			var out []string
			for _, suffix := range runAccounts {
				for _, b := range srv.Policy(resourceOf(namespace, suffix)).Bindings {
					for _, m := range b.Members {
						out = append(out, namespace+suffix+" lets "+m+" act as it ("+b.Role+")")
					}
				}
			}
			return out, nil
		},
		// A rival may name the Profile's accounts, which serve one Profile.
		RivalDefaults: func(profile string) []byte {
			var allowed []any
			for _, suffix := range runAccounts {
				allowed = append(allowed, map[string]any{"identity": profile + suffix})
			}
			b, err := json.Marshal(map[string]any{"serviceAccounts": runServiceAccounts, "allowedIdentities": allowed})
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		Touches:  touches,
		Retained: retained,
		// What it learnt of someone else's members stays in the record
		// once it is removed, so that a later pass that fails closed
		// leaves them (see revokeAll).
		Remembered: []string{"foreign/"},
	}
}

func TestWorkloadIdentitySurvivesEveryPerturbation(t *testing.T) {
	plugintest.Harness{Client: env.Client}.Survives(t, workloadIdentityScenario, plugintest.EveryPattern...)
}
