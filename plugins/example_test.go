package plugins_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"sigs.k8s.io/yaml"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// viewersConfig is the config of the viewers plugin below. Groups come from
// the host's defaults and may be replaced by a Profile; the ClusterRole is
// the host's alone (profilekit:"hostonly"), so no Profile can bind itself a
// stronger role.
type viewersConfig struct {
	ClusterRole string   `json:"clusterRole,omitempty" profilekit:"hostonly"`
	Groups      []string `json:"groups,omitempty"`
}

// Validate runs after the host's defaults and the Profile's spec are decoded
// over the built-in defaults.
func (c *viewersConfig) Validate() error {
	var errs []error
	if c.ClusterRole == "" {
		errs = append(errs, errors.New("clusterRole is empty"))
	}
	for i, g := range c.Groups {
		if strings.TrimSpace(g) == "" {
			errs = append(errs, fmt.Errorf("groups[%d] is empty", i))
		}
	}
	return errors.Join(errs...)
}

// buildViewers is the plugin's pure builder: Profile and config in, the
// desired object out, nothing read or written.
func buildViewers(cfg *viewersConfig, p *kubeflowv1.Profile) *rbacv1ac.RoleBindingApplyConfiguration {
	if len(cfg.Groups) == 0 {
		return nil
	}
	b := rbacv1ac.RoleBinding("profile-viewers", plugins.Namespace(p)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(cfg.ClusterRole))
	for _, g := range cfg.Groups {
		b.WithSubjects(rbacv1ac.Subject().WithAPIGroup(rbacv1.GroupName).WithKind(rbacv1.GroupKind).WithName(g))
	}
	return b
}

// viewersDefinition is everything a host needs to run the plugin: the
// Plugin, the config with its built-in defaults, and the kinds it owns.
func viewersDefinition() plugins.Definition {
	return plugins.Definition{
		Plugin: plugins.Funcs{
			KindName: "viewers",
			ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				cfg, err := plugins.ConfigOf[viewersConfig](req)
				if err != nil {
					return plugins.Result{}, err
				}
				var desired []runtime.ApplyConfiguration
				if b := buildViewers(cfg, req.Profile); b != nil {
					desired = append(desired, b)
				}
				// Sync writes what is desired and deletes the plugin's
				// other objects for this Profile.
				return req.Objects.Sync(ctx, desired...)
			},
			RevokeFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
				return req.Objects.DeleteAll(ctx)
			},
		},
		NewConfig: func() any { return &viewersConfig{ClusterRole: "view"} },
		Owns:      []schema.GroupVersionKind{rbacv1.SchemeGroupVersion.WithKind("RoleBinding")},
	}
}

// A plugin written from scratch: a config with defaults and validation, a
// pure builder, and a Definition. Here a recording Applier stands in for a
// cluster, as the host's render command does, and prints the object the
// plugin would write, with the ownership labels, owner reference and hash
// the Applier adds. Under a host (package reconcilers) the same Definition
// runs against the API server.
func Example_plugin() {
	def := viewersDefinition()
	hostDefaults := []byte(`{"groups": ["auditors@example.org"]}`)

	p := &kubeflowv1.Profile{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: kubeflowv1.ProfileSpec{Plugins: []kubeflowv1.Plugin{{
			TypeMeta: metav1.TypeMeta{Kind: "viewers"},
			Spec:     &runtime.RawExtension{Raw: []byte(`{"groups": ["team-a-readers@example.org"]}`)},
		}}},
	}
	cfg, err := def.Decode(hostDefaults, p)
	if err != nil {
		fmt.Println(err)
		return
	}
	rec := apply.NewRecorder(def.Kind(), p, def.Owns, apply.OptionsFor(def)...)
	res, err := def.Plugin.Apply(context.Background(), plugins.Request{Profile: p, Config: cfg, Objects: rec}) //nolint:forbidigo // no *testing.T in reach
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Summary())
	for _, obj := range rec.Recorded() {
		out, _ := yaml.Marshal(obj.Object)
		fmt.Print(string(out))
	}
	// Output:
	// 1 created
	// apiVersion: rbac.authorization.k8s.io/v1
	// kind: RoleBinding
	// metadata:
	//   annotations:
	//     profilekit.dev/applied-hash: e87af8625c7b201b
	//   labels:
	//     app.kubernetes.io/managed-by: profilekit
	//     profilekit.dev/plugin: viewers
	//     profilekit.dev/profile: team-a
	//   name: profile-viewers
	//   namespace: team-a
	//   ownerReferences:
	//   - apiVersion: kubeflow.org/v1
	//     blockOwnerDeletion: true
	//     controller: true
	//     kind: Profile
	//     name: team-a
	//     uid: ""
	// roleRef:
	//   apiGroup: rbac.authorization.k8s.io
	//   kind: ClusterRole
	//   name: view
	// subjects:
	// - apiGroup: rbac.authorization.k8s.io
	//   kind: Group
	//   name: team-a-readers@example.org
}

// Decode refuses what a Profile may not say, naming the entry and field as
// the Profile's author wrote them. The error is terminal: hosts report it
// in the plugin's condition and do not retry it.
func ExampleDefinition_Decode() {
	def := viewersDefinition()
	for _, spec := range []string{
		`{"groups": ["admins@example.org"], "clusterRole": "cluster-admin"}`,
		`{"groups": [""]}`,
		`{"group": ["typo@example.org"]}`,
	} {
		p := &kubeflowv1.Profile{
			ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
			Spec: kubeflowv1.ProfileSpec{Plugins: []kubeflowv1.Plugin{{
				TypeMeta: metav1.TypeMeta{Kind: "viewers"},
				Spec:     &runtime.RawExtension{Raw: []byte(spec)},
			}}},
		}
		_, err := def.Decode(nil, p)
		fmt.Printf("%s (terminal: %t)\n", plugins.FailureMessage(err, plugins.ReasonApplyFailed), plugins.IsTerminal(err))
	}
	// Output:
	// InvalidSpec: spec.plugins[0] (viewers).spec: field "clusterRole" is set by the host only (terminal: true)
	// InvalidSpec: spec.plugins[0] (viewers).spec: groups[0] is empty (terminal: true)
	// InvalidSpec: spec.plugins[0] (viewers).spec: unknown field "group" (terminal: true)
}

// CheckObjectName refuses, one problem a line, a name a config may not give
// an object: one the API server would refuse, or one of the upstream
// controller's.
func ExampleCheckObjectName() {
	for _, name := range []string{"team-quota", "Team_Quota", "kf-resource-quota"} {
		err := plugins.CheckObjectName(name)
		if err == nil {
			fmt.Println(name, "is fine")
			continue
		}
		// Only the start of the API machinery's own explanation.
		msg, _, _ := strings.Cut(err.Error(), " must ")
		fmt.Println(msg)
	}
	// Output:
	// team-quota is fine
	// name "Team_Quota": a lowercase RFC 1123 subdomain
	// name "kf-resource-quota" belongs to the upstream profile controller
}
