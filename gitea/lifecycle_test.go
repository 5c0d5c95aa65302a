package gitea_test

// This file holds the tests of a Profile's life with the plugin: opting in,
// resyncing, retention, deletion and a lost secret.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/gitea"
	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apps"
)

// TestOptInProvisionsEverythingAndResyncIsQuiet runs alone: it counts its
// host's passes with the process's count of passes.
func TestOptInProvisionsEverythingAndResyncIsQuiet(t *testing.T) {
	h, sql := start(t, opts{})
	name := newName("gitea")
	newProfile(t, name, map[string]string{optIn: "true"})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	db := gitea.Name(prefix, name)

	t.Run("role and database exist, and the role can use its database over verified TLS", func(t *testing.T) {
		s, ok := secret(t, name)
		if !ok {
			t.Fatal("no database Secret")
		}
		if got := string(s.Data[gitea.KeyUser]); got != db {
			t.Errorf("Secret user = %q, want %q", got, db)
		}
		pw := string(s.Data[gitea.KeyPassword])
		if len(pw) < 40 {
			t.Fatalf("password of %d characters", len(pw))
		}
		conn, err := pgx.Connect(t.Context(), pg.DSN(db, pw, db, "verify-full", caFile(t)))
		if err != nil {
			t.Fatalf("connect as the role: %v", err)
		}
		defer conn.Close(t.Context())
		if _, err := conn.Exec(t.Context(), "CREATE TABLE repo (id int PRIMARY KEY, name text)"); err != nil {
			t.Fatalf("create table as the role: %v", err)
		}
		var enc, collate string
		if err := conn.QueryRow(t.Context(), "SELECT pg_encoding_to_char(encoding), datcollate FROM pg_database WHERE datname = current_database()").Scan(&enc, &collate); err != nil {
			t.Fatal(err)
		}
		if enc != "UTF8" || collate != "C" {
			t.Errorf("database encoding %s, collation %s; want UTF8 and C", enc, collate)
		}
	})

	t.Run("the Application deploys the chart into the Profile's namespace with automated sync", func(t *testing.T) {
		u, ok := application(t, name)
		if !ok {
			t.Fatal("no Application")
		}
		spec := u.Object["spec"].(map[string]any)
		want := map[string]any{
			"project":     "default",
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": name},
			"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true, "selfHeal": true}},
		}
		got := map[string]any{"project": spec["project"], "destination": spec["destination"], "syncPolicy": spec["syncPolicy"]}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("Application spec (-want +got):\n%s", d)
		}
		src := spec["source"].(map[string]any)
		if src["repoURL"] != chartRepo || src["chart"] != "gitea" || src["targetRevision"] != "12.1.0" {
			t.Errorf("source = %v", src)
		}
		values := src["helm"].(map[string]any)["valuesObject"].(map[string]any)["gitea"].(map[string]any)
		cfg := values["config"].(map[string]any)
		if got := cfg["server"].(map[string]any)["ROOT_URL"]; got != "https://kubeflow.example.org/gitea-unclassified/"+name+"/" {
			t.Errorf("ROOT_URL = %v", got)
		}
		if got := cfg["server"].(map[string]any)["DISABLE_SSH"]; got != true {
			t.Errorf("the host's own value DISABLE_SSH = %v, want it kept", got)
		}
		if got := cfg["database"].(map[string]any)["NAME"]; got != db {
			t.Errorf("database NAME = %v", got)
		}
		if got := values["admin"].(map[string]any)["password"]; got != "" {
			t.Errorf("admin password = %v, want none", got)
		}
		raw, _ := json.Marshal(u.Object)
		if strings.Contains(string(raw), string(mustSecret(t, name).Data[gitea.KeyPassword])) {
			t.Error("the Application holds the database password")
		}
		if !slices.Contains(u.GetFinalizers(), apps.ResourcesFinalizer) {
			t.Errorf("finalizers %v lack %s", u.GetFinalizers(), apps.ResourcesFinalizer)
		}
	})

	t.Run("the route redirects the dashboard link and serves the namespace's prefix, never by Referer", func(t *testing.T) {
		var vs istionetworkingv1.VirtualService
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "gitea-unclassified"}, &vs); err != nil {
			t.Fatal(err)
		}
		if len(vs.Spec.Http) != 2 {
			t.Fatalf("%d routes, want redirect and route", len(vs.Spec.Http))
		}
		redirect, route := vs.Spec.Http[0], vs.Spec.Http[1]
		if m := redirect.Match[0]; m.Uri.GetExact() != "/gitea-unclassified/" || m.QueryParams["ns"].GetExact() != name || redirect.Redirect.GetUri() != "/gitea-unclassified/"+name+"/" {
			t.Errorf("redirect = %v", redirect)
		}
		if route.Match[0].Uri.GetPrefix() != "/gitea-unclassified/"+name+"/" || route.Route[0].Destination.Host != "gitea-http."+name+".svc.cluster.local" || route.Route[0].Destination.Port.Number != 3000 {
			t.Errorf("route = %v", route)
		}
		for _, r := range vs.Spec.Http {
			for _, m := range r.Match {
				if len(m.Headers) > 0 {
					t.Errorf("route %s matches headers %v", r.Name, m.Headers)
				}
			}
		}
	})

	t.Run("the NetworkPolicy admits the ingress gateway to the Gitea pods only", func(t *testing.T) {
		var np networkingv1.NetworkPolicy
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "gitea-unclassified"}, &np); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(map[string]string{"app.kubernetes.io/name": "gitea"}, np.Spec.PodSelector.MatchLabels); d != "" {
			t.Errorf("pod selector (-want +got):\n%s", d)
		}
		from := np.Spec.Ingress[0].From
		if len(np.Spec.Ingress) != 1 || len(from) != 1 || from[0].NamespaceSelector.MatchLabels[corev1.LabelMetadataName] != "istio-system" || from[0].PodSelector.MatchLabels["istio"] != "ingressgateway" {
			t.Errorf("ingress = %v", np.Spec.Ingress)
		}
	})

	t.Run("the external database host has a ServiceEntry", func(t *testing.T) {
		var se istionetworkingv1.ServiceEntry
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "gitea-unclassified-postgres"}, &se); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(se.Spec.Hosts, []string{pg.Host}) || se.Spec.Ports[0].Number != uint32(pg.Port) {
			t.Errorf("ServiceEntry hosts %v ports %v", se.Spec.Hosts, se.Spec.Ports)
		}
	})

	t.Run("a second pass sends no mutating request and no SQL that writes", func(t *testing.T) {
		if got := h.ResyncWrites(t, 3, gitea.Kind); len(got) != 0 {
			t.Errorf("resync sent %d mutating requests: %v", len(got), got)
		}
		sql.reset()
		before := testhost.Reconciles(t, gitea.Kind)
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			n := testhost.Reconciles(t, gitea.Kind) - before
			return n >= 3, fmt.Sprintf("%v passes", n)
		})
		all, writes := sql.counts()
		t.Logf("%v passes after the first: %d SQL statements, %d that write", testhost.Reconciles(t, gitea.Kind)-before, all, len(writes))
		if len(writes) != 0 {
			t.Errorf("resync sent SQL that writes: %v", writes)
		}
		if all != 0 {
			t.Errorf("resync sent %d SQL statements; the outside-state record should have spared them all", all)
		}
	})

	t.Run("opting out deletes the Application with Argo CD's finalizer and keeps the database", func(t *testing.T) {
		pw := string(mustSecret(t, name).Data[gitea.KeyPassword])
		setLabel(t, name, "false")
		finishArgoCD(t, name)
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			var vs istionetworkingv1.VirtualService
			err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "gitea-unclassified"}, &vs)
			return apierrors.IsNotFound(err), fmt.Sprintf("route: %v", err)
		})
		if !roleExists(t, db) || !databaseExists(t, db) {
			t.Error("opting out dropped the role or the database")
		}
		setLabel(t, name, "true")
		testhost.Eventually(t, 20*time.Second, func() (bool, string) {
			_, ok := application(t, name)
			return ok, "no Application after opting in again"
		})
		if got := string(mustSecret(t, name).Data[gitea.KeyPassword]); got != pw {
			t.Error("opting in again changed the password")
		}
	})
}

// TestSpecEnablesAnInstance: a Profile without the opt-in label that
// names the instance in its spec (enable) gets the instance.
func TestSpecEnablesAnInstance(t *testing.T) {
	t.Parallel()
	start(t, opts{})
	name := newName("gitea-spec")
	raw, _ := json.Marshal(map[string]any{"enable": []string{"unclassified"}})
	newProfile(t, name, nil, kubeflowv1.Plugin{TypeMeta: metav1.TypeMeta{Kind: gitea.Kind}, Spec: &runtime.RawExtension{Raw: raw}})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	if _, ok := application(t, name); !ok {
		t.Error("no Application for the instance the spec enables")
	}
	if db := gitea.Name(prefix, name); !roleExists(t, db) || !databaseExists(t, db) {
		t.Errorf("no role or database %s for the instance the spec enables", db)
	}
}

func TestRetentionDeleteDropsDatabaseAndRole(t *testing.T) {
	t.Parallel()
	start(t, opts{retention: plugins.RetentionDelete})
	name := newName("gitea-del")
	p := newProfile(t, name, map[string]string{optIn: "true"})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	db := gitea.Name(prefix, name)
	held := heldKey(t, p)
	// A connection of the role's own stays open; dropping must end it.
	conn, err := pgx.Connect(t.Context(), pg.DSN(db, string(mustSecret(t, name).Data[gitea.KeyPassword]), db, "verify-full", caFile(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())

	setLabel(t, name, "false")
	finishArgoCD(t, name)
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		return !databaseExists(t, db) && !roleExists(t, db), "database or role still there"
	})
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		_, ok := secret(t, name)
		err := env.Client.Get(t.Context(), held, &corev1.Secret{})
		return !ok && apierrors.IsNotFound(err), fmt.Sprintf("the Secret is still there, or the password the host keeps (%v)", err)
	})
	// The pass that drops them succeeds: it lets go of the kept password
	// without reporting a failure (a Warning Event), and the condition is
	// True.
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	for _, e := range testhost.Events(t, env.Client, name) {
		if strings.Contains(e, " Warning ") {
			t.Errorf("letting go of the database recorded a Warning Event: %s", e)
		}
	}
}

// TestRetentionDeleteDropsWhatTheRecordNamesWithoutAKeptPassword: under
// retention Delete, an instance let go whose kept password is lost is
// still dropped: the record says the plugin made its database and role.
// The plugin is paused while the password goes and the instance is turned
// off, so that no pass keeps a password again first.
func TestRetentionDeleteDropsWhatTheRecordNamesWithoutAKeptPassword(t *testing.T) {
	t.Parallel()
	start(t, opts{retention: plugins.RetentionDelete})
	name := newName("gitea-recorded")
	p := newProfile(t, name, map[string]string{optIn: "true"})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	db := gitea.Name(prefix, name)

	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, plugins.AnnotationPaused, gitea.Kind)
	})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionUnknown, plugins.ReasonPaused)
	held := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: hostNS, Name: heldKey(t, p).Name}}
	if err := env.Client.Delete(t.Context(), held); err != nil {
		t.Fatalf("the host keeps no password: %v", err)
	}
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		p.Labels[optIn] = "false"
		delete(p.Annotations, plugins.AnnotationPaused)
	})
	finishArgoCD(t, name)
	testhost.Eventually(t, 20*time.Second, func() (bool, string) {
		return !databaseExists(t, db) && !roleExists(t, db), "database or role still there"
	})
}

// TestRemovedPluginKeepsTheDatabaseAndItsSecret: under Retain, a plugin no
// longer applied to a Profile that lives on takes back its objects but the
// database, and the Secret in the Profile's namespace that opens it: also
// when the host keeps no password for it (an install of an earlier
// version, or the kept password lost), when that Secret is the only place
// the password is.
func TestRemovedPluginKeepsTheDatabaseAndItsSecret(t *testing.T) {
	t.Parallel()
	for _, kept := range []bool{true, false} {
		t.Run(fmt.Sprintf("a password kept: %v", kept), func(t *testing.T) {
			t.Parallel()
			enabled := map[string]string{"gitea-enabled": "yes"}
			start(t, opts{enabledBy: enabled})
			name := newName("gitea-removed")
			p := newProfile(t, name, map[string]string{optIn: "true", "gitea-enabled": "yes"})
			testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
			old := string(mustSecret(t, name).Data[gitea.KeyPassword])

			remove := func(p *kubeflowv1.Profile) { delete(p.Labels, "gitea-enabled") }
			if !kept {
				// Paused while the kept password goes, so that no pass keeps
				// it again before the plugin is removed.
				testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
					metav1.SetMetaDataAnnotation(&p.ObjectMeta, plugins.AnnotationPaused, gitea.Kind)
				})
				testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionUnknown, plugins.ReasonPaused)
				held := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: hostNS, Name: heldKey(t, p).Name}}
				if err := env.Client.Delete(t.Context(), held); err != nil {
					t.Fatalf("the host keeps no password: %v", err)
				}
				remove = func(p *kubeflowv1.Profile) {
					delete(p.Labels, "gitea-enabled")
					delete(p.Annotations, plugins.AnnotationPaused)
				}
			}
			testhost.UpdateProfile(t, env.Client, name, remove)
			// The revoke waits for Argo CD to remove what the Application
			// deployed: until then it is not done.
			if c := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionUnknown, plugins.ReasonWaiting); !strings.Contains(c.Message, apps.ApplicationName(name, gitea.AppName("unclassified"))) {
				t.Errorf("condition %q does not name the Application it waits for", c.Message)
			}
			finishArgoCD(t, name)
			testhost.Eventually(t, 20*time.Second, func() (bool, string) {
				var p kubeflowv1.Profile
				if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
					return false, err.Error()
				}
				return plugins.FindCondition(p.Status.Conditions, condType) == nil, "the plugin's condition is still there: not revoked yet"
			})
			if _, ok := application(t, name); ok {
				t.Error("the Application is still there")
			}
			if s, ok := secret(t, name); !ok {
				t.Error("the database Secret was deleted with the plugin's other objects")
			} else if got := string(s.Data[gitea.KeyPassword]); got != old {
				t.Errorf("the Secret holds password %q, want the one it held", got)
			}
			db := gitea.Name(prefix, name)
			if !databaseExists(t, db) {
				t.Error("retention Retain, yet the database was dropped")
			}
			if err := login(t, db, old, db); err != nil {
				t.Errorf("the Secret's password no longer opens the database: %v", err)
			}
		})
	}
}

func TestProfileDeletionLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	start(t, opts{})
	name := newName("gitea-gone")
	p := newProfile(t, name, map[string]string{optIn: "true"})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	if err := env.Client.Delete(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	finishArgoCD(t, name)
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &kubeflowv1.Profile{})
		return apierrors.IsNotFound(err), fmt.Sprintf("Profile: %v", err)
	})
	left := []string{}
	if _, ok := application(t, name); ok {
		left = append(left, "Application")
	}
	if _, ok := secret(t, name); ok {
		left = append(left, "Secret")
	}
	for _, obj := range []client.Object{&istionetworkingv1.VirtualService{}, &networkingv1.NetworkPolicy{}} {
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "gitea-unclassified"}, obj)
		if !apierrors.IsNotFound(err) {
			left = append(left, fmt.Sprintf("%T", obj))
		}
	}
	if len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if db := gitea.Name(prefix, name); !databaseExists(t, db) {
		t.Error("retention Retain, yet the database was dropped")
	}
}

// TestLostSecretIsWrittenAgain: the tenant, with Kubeflow's rights in its
// namespace, deletes the Secret with its database's password. The host
// keeps the password: the Secret is written again with it, the role's
// password is not changed, nothing is deleted, and the condition is True.
func TestLostSecretIsWrittenAgain(t *testing.T) {
	t.Parallel()
	start(t, opts{})
	name := newName("gitea-lost")
	newProfile(t, name, map[string]string{optIn: "true"})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	old := string(mustSecret(t, name).Data[gitea.KeyPassword])
	tenant := testhost.Tenant(t, env, name)
	if err := tenant.Delete(t.Context(), mustSecret(t, name)); err != nil {
		t.Fatalf("the tenant deletes the Secret: %v", err)
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		s, ok := secret(t, name)
		return ok && string(s.Data[gitea.KeyPassword]) == old, "the Secret is not back with the host's password"
	})
	if _, ok := application(t, name); !ok {
		t.Error("the Application was deleted over a lost Secret")
	}
	db := gitea.Name(prefix, name)
	if err := login(t, db, old, db); err != nil {
		t.Errorf("the Secret's password does not open the database: %v", err)
	}
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
}

// TestLetGoWithoutAKeptPasswordLeavesTheSecret: under Retain, an instance
// the Profile no longer runs keeps its database and the database Secret in
// the Profile's namespace. When the host keeps no password for it (an
// install of an earlier version, or the kept one lost), that Secret is left
// as it is: never written again, and never with an empty password.
func TestLetGoWithoutAKeptPasswordLeavesTheSecret(t *testing.T) {
	t.Parallel()
	start(t, opts{})
	name := newName("gitea-letgo")
	p := newProfile(t, name, map[string]string{optIn: "true"})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	old := string(mustSecret(t, name).Data[gitea.KeyPassword])
	setLabel(t, name, "false")
	finishArgoCD(t, name)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")

	held := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: hostNS, Name: heldKey(t, p).Name}}
	if err := env.Client.Delete(t.Context(), held); err != nil {
		t.Fatalf("the host keeps no password: %v", err)
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(held), &corev1.Secret{})
		return apierrors.IsNotFound(err), fmt.Sprintf("the kept password is still there: %v", err)
	})
	// A new generation: a pass that finds no kept password.
	testhost.UpdateProfile(t, env.Client, name, func(p *kubeflowv1.Profile) {
		p.Spec.ResourceQuotaSpec.Hard = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}
	})
	if c := testhost.CurrentCondition(t, env.Client, name, condType); c.Status != plugins.ConditionTrue {
		t.Errorf("condition %s %q, want True", c.Status, c.Message)
	}
	s := mustSecret(t, name)
	if got := string(s.Data[gitea.KeyPassword]); got != old {
		t.Errorf("the Secret holds password %q, want the one it held", got)
	}
	if db := gitea.Name(prefix, name); !databaseExists(t, db) {
		t.Error("retention Retain, yet the database was dropped")
	}
}

// TestEmptiedHeldPasswordIsNeverUsed: the Secret in which the host keeps
// the role's password is there, the plugin's, but holds no password (emptied
// by someone with the platform's rights). The pass finds no password kept,
// cannot keep one where that Secret stands, and stops there: no empty
// password reaches the role or the tenant's Secret.
func TestEmptiedHeldPasswordIsNeverUsed(t *testing.T) {
	t.Parallel()
	start(t, opts{})
	name := newName("gitea-empty")
	p := newProfile(t, name, map[string]string{optIn: "true"})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	old := string(mustSecret(t, name).Data[gitea.KeyPassword])
	db := gitea.Name(prefix, name)
	verifier, _, _ := catalogRole(t, db)
	var s corev1.Secret
	if err := env.Client.Get(t.Context(), heldKey(t, p), &s); err != nil {
		t.Fatalf("the host keeps no password: %v", err)
	}
	s.Data = nil
	if err := env.Client.Update(t.Context(), &s); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 30*time.Second, func() (bool, string) {
		if got := string(mustSecret(t, name).Data[gitea.KeyPassword]); got != old {
			t.Fatalf("the tenant's Secret holds password %q, want the one it held", got)
		}
		c := testhost.CurrentCondition(t, env.Client, name, condType)
		return c.Status == plugins.ConditionFalse && strings.Contains(c.Message, "cannot be read yet"), fmt.Sprintf("condition %s %q", c.Status, c.Message)
	})
	if after, _, _ := catalogRole(t, db); after != verifier {
		t.Error("the role's password changed")
	}
	if err := login(t, db, old, db); err != nil {
		t.Errorf("the password the role had no longer opens the database: %v", err)
	}
}

// TestLostHeldPasswordIsCarriedOver: the password the host keeps is
// deleted (by someone with the platform's rights, or never written, as on
// an install of an earlier version). The role carries the Profile's proof
// and the Secret's password logs in as it: that password is kept again,
// the role's is not changed.
func TestLostHeldPasswordIsCarriedOver(t *testing.T) {
	t.Parallel()
	start(t, opts{})
	name := newName("gitea-held")
	p := newProfile(t, name, map[string]string{optIn: "true"})
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	old := string(mustSecret(t, name).Data[gitea.KeyPassword])
	db := gitea.Name(prefix, name)
	verifier, _, _ := catalogRole(t, db)
	held := heldKey(t, p)
	var s corev1.Secret
	if err := env.Client.Get(t.Context(), held, &s); err != nil {
		t.Fatalf("the host keeps no password: %v", err)
	}
	if got := string(s.Data[gitea.KeyPassword]); got != old {
		t.Fatal("the Secret does not hold the password the host keeps")
	}
	if err := env.Client.Delete(t.Context(), &s); err != nil {
		t.Fatal(err)
	}
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		var s corev1.Secret
		if err := env.Client.Get(t.Context(), held, &s); err != nil {
			return false, err.Error()
		}
		return s.UID != "" && string(s.Data[gitea.KeyPassword]) == old, "the host keeps another password"
	})
	if after, _, _ := catalogRole(t, db); after != verifier {
		t.Error("the role's password changed")
	}
	if err := login(t, db, string(mustSecret(t, name).Data[gitea.KeyPassword]), db); err != nil {
		t.Errorf("the Secret's password does not open the database: %v", err)
	}
}
