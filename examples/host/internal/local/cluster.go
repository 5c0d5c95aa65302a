package local

// This file holds what makes the control plane a cluster to keep and use:
// kube-controller-manager, Kubeflow's roles, and a kubeconfig for kubectl.

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/profilekit/profilekit/internal/controllermanager"
	"github.com/profilekit/profilekit/plugins/core"
)

// controllers are the kube-controller-manager controllers a kept local
// cluster runs: garbage collection (a deleted Profile's objects go),
// namespace deletion, each namespace's default ServiceAccount, quota use
// (the page's bars), and role aggregation (view, edit, admin and
// Kubeflow's roles get their rules).
var controllers = []string{
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"resourcequota-controller",
	"clusterrole-aggregation-controller",
}

// StartControllerManager starts kube-controller-manager from assets against
// env with the controllers a kept cluster runs, its folder under dir.
func StartControllerManager(assets string, env *envtest.Environment, dir string) (*controllermanager.Process, error) {
	return controllermanager.Start(controllermanager.Options{
		Assets: assets, Env: env, Controllers: controllers, Dir: dir,
		// Deleted namespaces go within seconds, not minutes.
		Args: []string{"--namespace-sync-period=10s"},
	})
}

// KubeflowRoles creates the ClusterRoles that Kubeflow's manifests install
// and the core plugin binds (kubeflow-admin, -edit, -view), as stand-ins
// that aggregate what Kubernetes' admin, edit and view aggregate, so that
// a Profile's owner and contributors may do in their namespace what they
// may in a cluster, and the page's access check answers as there. They
// need the clusterrole-aggregation controller for their rules.
func KubeflowRoles(ctx context.Context, c client.Client) error {
	for name, aggregates := range map[string]string{
		core.ClusterRoleAdmin: "admin",
		core.ClusterRoleEdit:  "edit",
		core.ClusterRoleView:  "view",
	} {
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{
				MatchLabels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-" + aggregates: "true"},
			}}},
		}
		if err := c.Create(ctx, role); client.IgnoreAlreadyExists(err) != nil {
			return fmt.Errorf("create ClusterRole %s: %w", name, err)
		}
	}
	return nil
}

// WriteKubeconfig writes a kubeconfig that reaches the API server of cfg
// as an administrator (cfg's client certificate) to path, readable by its
// owner alone.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["profilekit-local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["profilekit-local"] = &clientcmdapi.Context{Cluster: "profilekit-local", AuthInfo: "admin"}
	kc.CurrentContext = "profilekit-local"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write the kubeconfig: %w", err)
	}
	return nil
}
