package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/profilekit/profilekit/examples/host/builtin"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apps"
	"github.com/profilekit/profilekit/plugins/blobcsi"
	"github.com/profilekit/profilekit/plugins/budgets"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/plugins/rbac"
	"github.com/profilekit/profilekit/plugins/volumes"
)

// The checks here are shared by the kustomize overlays (deploy_test.go) and
// the Helm chart (helm_test.go): both deploy the same host.

// hostNamespace is where both deploy the host.
const hostNamespace = "profilekit-system"

// access is one verb on one resource of an API group.
type access struct{ group, resource, verb string }

var (
	// ownVerbs are what a plugin needs on the kinds it owns: server-side
	// apply, the label-filtered cache, pruning.
	ownVerbs = []string{"create", "get", "list", "watch", "patch", "delete"}
	// readVerbs are what a plugin needs on a kind it reads by name and
	// watches.
	readVerbs = []string{"get", "list", "watch"}
	// watchVerbs are what the cache needs on a watched kind, which is read
	// from the cache alone.
	watchVerbs = []string{"list", "watch"}
	// beyond is what a plugin does besides writing its kinds and watching
	// others: volumes patches the volumes bound to its claims and its
	// sweeper reads released ones again by name and deletes them; blobcsi
	// lists a namespace's pods to name those that still mount a volume it
	// removes.
	beyond = map[string][]access{
		volumes.Kind: {{"", "persistentvolumes", "get"}, {"", "persistentvolumes", "patch"}, {"", "persistentvolumes", "delete"}},
		blobcsi.Kind: {{"", "pods", "list"}},
		// The balancer writes the members' quotas, which the plugin does
		// not declare as owned (the host must not prune them), and reads
		// workload controllers' FailedCreate Events.
		budgets.Kind: slices.Concat(grants("", "resourcequotas", ownVerbs...), grants("", "events", watchVerbs...)),
	}
)

func grants(group, resource string, verbs ...string) []access {
	out := make([]access, 0, len(verbs))
	for _, v := range verbs {
		out = append(out, access{group, resource, v})
	}
	return out
}

// hostNeeds returns what the host needs cluster-wide for the plugins cfg
// enables: Profiles read and their status written, Events, and each plugin's
// owned and watched kinds and finalizer; and the tenant page's, when cfg
// turns it on. Applications are left out: they are granted in the Argo CD
// namespace only; and so are the outside-state records, in the host's
// namespace only (checkRecordsRole).
func hostNeeds(t *testing.T, reg *plugins.Registry, scheme *runtime.Scheme, cfg *hostconfig.Config) []access {
	t.Helper()
	need := slices.Concat(
		grants("kubeflow.org", "profiles", readVerbs...),
		// Status is written from the cached Profile, never read.
		grants("kubeflow.org", "profiles/status", "update"),
		// Owner references with blockOwnerDeletion.
		grants("kubeflow.org", "profiles/finalizers", "update"),
		grants("events.k8s.io", "events", "create", "patch"),
	)
	for _, kind := range cfg.Enabled() {
		def, _ := reg.Get(kind)
		if def.OwnsFrom != nil {
			// The kinds the configuration's templates name.
			sec, _ := cfg.Section(kind)
			hostCfg, err := def.DecodeHostDefaults(sec.Defaults)
			if err != nil {
				t.Fatal(err)
			}
			kinds, err := def.OwnsFrom(hostCfg)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(kinds, rbacv1.SchemeGroupVersion.WithKind("Role")) {
				// Writing a Role's rules the host need not hold.
				need = append(need, access{rbacv1.GroupName, "roles", "escalate"})
			}
			if def, err = def.ForHost(hostCfg); err != nil {
				t.Fatal(err)
			}
		}
		for _, gvk := range def.Owns {
			if gvk != apps.ApplicationKind {
				need = append(need, grants(gvk.Group, resource(gvk), ownVerbs...)...)
			}
		}
		for _, w := range def.Watches {
			gvk, err := apiutil.GVKForObject(w.Object, scheme)
			if err != nil {
				t.Fatal(err)
			}
			need = append(need, grants(gvk.Group, resource(gvk), watchVerbs...)...)
			if gvk.Kind == "ServiceAccount" {
				// Cloud identity plugins apply their annotation keys.
				need = append(need, access{"", "serviceaccounts", "patch"})
			}
		}
		sec, _ := cfg.Section(kind)
		if def.Finalizer() != "" || handsOverFinalizer(t, def, sec) {
			need = append(need, access{"kubeflow.org", "profiles", "patch"})
		}
		need = append(need, beyond[kind]...)
	}
	if cfg.Page.Enabled {
		need = append(need, pageNeeds()...)
	}
	return need
}

// handsOverFinalizer reports whether the plugin's host defaults take
// another controller's finalizer off the Profiles (core's
// handOverFinalizer).
func handsOverFinalizer(t *testing.T, def plugins.Definition, sec hostconfig.Plugin) bool {
	t.Helper()
	c, err := def.DecodeHostDefaults(sec.Defaults)
	if err != nil {
		t.Fatal(err)
	}
	h, ok := c.(interface{ HandedOverFinalizer() (string, []string) })
	if !ok {
		return false
	}
	fin, _ := h.HandedOverFinalizer()
	return fin != ""
}

// checkHostRBAC checks the ClusterRoles bound to the host's ServiceAccount
// in objs (hostRules): they grant what every enabled plugin writes and
// watches, and what the page reads when it is on, with no wildcards, no write
// to Profiles themselves and no Istio kinds unless a plugin writes them; the
// roles the host binds may be bound; Applications are granted in the Argo CD
// namespace only; and a Role in the Lease's namespace lets the host take the
// Lease. It returns those rules as one ClusterRole, and what the plugins
// and the page need of it.
func checkHostRBAC(t *testing.T, reg *plugins.Registry, scheme *runtime.Scheme, cfg *hostconfig.Config, objs []*unstructured.Unstructured) (*rbacv1.ClusterRole, []access) {
	t.Helper()
	cr := hostRules(t, objs)
	need := hostNeeds(t, reg, scheme, cfg)
	istio := false
	for _, kind := range cfg.Enabled() {
		def, _ := reg.Get(kind)
		for _, gvk := range def.Owns {
			istio = istio || strings.HasSuffix(gvk.Group, "istio.io")
			if gvk == apps.ApplicationKind {
				checkApplicationRole(t, objs, cr.Rules)
			}
		}
	}
	for _, n := range need {
		if !allows(cr.Rules, n.group, n.resource, n.verb) {
			t.Errorf("ClusterRole lacks %s on %s.%s", n.verb, n.resource, n.group)
		}
	}
	for _, r := range cr.Rules {
		if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") {
			t.Errorf("ClusterRole rule %+v uses a wildcard", r)
		}
		if slices.Contains(r.Resources, "profiles") && slices.ContainsFunc(r.Verbs, func(v string) bool { return v == "update" || v == "delete" || v == "create" }) {
			t.Errorf("ClusterRole lets the host write Profiles themselves: %+v", r)
		}
		if !istio && slices.ContainsFunc(r.APIGroups, func(g string) bool { return strings.HasSuffix(g, "istio.io") }) {
			t.Errorf("ClusterRole grants Istio kinds, which no enabled plugin writes: %+v", r)
		}
	}
	if sec, on := cfg.Section(rbac.Kind); on {
		checkGrants(t, reg, sec, cr.Rules)
	}
	if _, on := cfg.Section(core.Kind); on {
		for _, name := range []string{core.ClusterRoleAdmin, core.ClusterRoleEdit, core.ClusterRoleView} {
			if !allowsNamed(cr.Rules, rbacv1.GroupName, "clusterroles", "bind", name) {
				t.Errorf("ClusterRole lacks bind on ClusterRole %q, which core's RoleBindings grant", name)
			}
		}
	}

	checkRecordsRole(t, reg, cfg, objs, cr.Rules, need)

	role := one[rbacv1.Role](t, objs, "Role", "profilekit-leader-election")
	for _, v := range []string{"get", "create", "update"} {
		if !allows(role.Rules, "coordination.k8s.io", "leases", v) {
			t.Errorf("leader election Role lacks %s on leases", v)
		}
	}
	if want := cmpOr(cfg.LeaderElection.Namespace, hostNamespace); role.Namespace != want {
		t.Errorf("leader election Role in namespace %q, the Lease in %q", role.Namespace, want)
	}
	return cr, need
}

// checkRecordsRole checks that a Role in the host's namespace (the
// Lease's) lets the host keep its records there, and read the namespace
// itself, when an enabled plugin keeps outside state, and read them when
// the webhook does; and that the ClusterRole lets the host write ConfigMaps in every
// namespace only when an enabled plugin writes them there (need holds it).
func checkRecordsRole(t *testing.T, reg *plugins.Registry, cfg *hostconfig.Config, objs []*unstructured.Unstructured, cluster []rbacv1.PolicyRule, need []access) {
	t.Helper()
	outside := false
	for _, kind := range cfg.Enabled() {
		def, _ := reg.Get(kind)
		outside = outside || def.OutsideState
	}
	if outside || cfg.Webhook.Enabled {
		role := one[rbacv1.Role](t, objs, "Role", "profilekit-records")
		if want := cmpOr(cfg.LeaderElection.Namespace, hostNamespace); role.Namespace != want {
			t.Errorf("records Role in namespace %q, the host's is %q", role.Namespace, want)
		}
		verbs := readVerbs
		if outside {
			verbs = ownVerbs
			if !allows(role.Rules, "", "namespaces", "get") {
				t.Error("records Role lacks get on namespaces (the host reads its own)")
			}
		}
		for _, v := range verbs {
			if !allows(role.Rules, "", "configmaps", v) {
				t.Errorf("records Role lacks %s on configmaps", v)
			}
		}
	}
	for _, v := range []string{"create", "update", "patch", "delete", "deletecollection"} {
		if allows(cluster, "", "configmaps", v) && !slices.Contains(need, access{"", "configmaps", v}) {
			t.Errorf("the ClusterRole lets the host %s ConfigMaps in every namespace, and no enabled plugin writes them there", v)
		}
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// checkDeployment checks the host's Deployment: the command line, probes,
// metrics port, the configuration's ConfigMap, the service account, and a
// container that runs as non-root with a read-only root file system, no
// capabilities and the runtime's seccomp profile.
func checkDeployment(t *testing.T, objs []*unstructured.Unstructured, configMap string) *appsv1.Deployment {
	t.Helper()
	dep := one[appsv1.Deployment](t, objs, "Deployment", "profilekit")
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	if !slices.Contains(c.Args, "--config=/etc/profilekit/host.yaml") || !slices.Contains(c.Args, "--leader-elect=true") {
		t.Errorf("container args %v", c.Args)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes: liveness %+v readiness %+v", c.LivenessProbe, c.ReadinessProbe)
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" && p.ContainerPort == 8080 }) {
		t.Errorf("no metrics port in %v", c.Ports)
	}
	vol := pod.Volumes[0]
	if vol.ConfigMap == nil || vol.ConfigMap.Name != configMap {
		t.Errorf("the Deployment mounts %+v, not the ConfigMap %s", vol, configMap)
	}
	if pod.ServiceAccountName != "profilekit" {
		t.Errorf("service account %q", pod.ServiceAccountName)
	}
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v, want non-root and seccomp RuntimeDefault", psc)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container security context %+v, want a read-only root file system, no privilege escalation and every capability dropped", sc)
	}
	return dep
}

// hostKinds are the kinds both deploy, besides the Namespace that kustomize
// makes and Helm leaves to --create-namespace.
var hostKinds = []string{"CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Deployment", "Service"}

// registryAndScheme returns the registry of the plugins the binary is built
// with and the host's scheme.
func registryAndScheme(t *testing.T) (*plugins.Registry, *runtime.Scheme) {
	t.Helper()
	reg, err := plugins.NewRegistry(builtin.Definitions()...)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := server.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	return reg, scheme
}

// checkHostObjects checks that objs hold every kind in kinds and the
// ConfigMap profilekit-config, whose host.yaml is a copy of the file source
// and a valid host configuration; it returns the configuration and the
// ConfigMap's name.
func checkHostObjects(t *testing.T, reg *plugins.Registry, objs []*unstructured.Unstructured, source string, kinds ...string) (*hostconfig.Config, string) {
	t.Helper()
	var got []string
	for _, u := range objs {
		got = append(got, u.GetKind())
	}
	for _, k := range kinds {
		if !slices.Contains(got, k) {
			t.Errorf("no %s in the output (kinds: %v)", k, got)
		}
	}
	cm := one[corev1.ConfigMap](t, objs, "ConfigMap", "profilekit-config")
	src, err := os.ReadFile(source)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["host.yaml"] != string(src) {
		t.Errorf("the ConfigMap's host.yaml is not a copy of examples/host/%s; copy it again:\n%s", source, cmp.Diff(string(src), cm.Data["host.yaml"]))
	}
	cfg, err := hostconfig.Parse("ConfigMap "+cm.Name+" host.yaml", []byte(cm.Data["host.yaml"]), reg)
	if err != nil {
		t.Fatalf("the ConfigMap does not hold a valid host configuration: %v", err)
	}
	return cfg, cm.Name
}
