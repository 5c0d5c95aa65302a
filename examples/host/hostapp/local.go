package hostapp

import (
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/profilekit/profilekit/examples/host/internal/demo"
	"github.com/profilekit/profilekit/examples/host/internal/local"
)

func newLocalCommand(app App, g *globals) *cobra.Command {
	f := &demoFlags{}
	var pageAddress, as string
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Keep a local cluster with the host, the sample Profiles and the tenant page running until Ctrl-C",
		Long: `local starts what demo starts (a private kube-apiserver and etcd, the CRDs
the enabled plugins need, the host in-process, the sample Profiles), and
kube-controller-manager and the tenant page with them, then keeps it all
running until Ctrl-C (SIGINT or SIGTERM). It prints a kubeconfig for
kubectl, the page's address and three kubectl lines to try.

kube-controller-manager runs garbage collection, namespace deletion, each
namespace's default ServiceAccount, quota use and role aggregation; the
ClusterRoles kubeflow-admin, -edit and -view, which Kubeflow's manifests
install and the core plugin binds, are made as aggregates of Kubernetes'
admin, edit and view. Nothing runs pods: there is no scheduler and no
kubelet.

The page takes the user from the user-id header (kubeflow-userid), as it
does behind the Kubeflow gateway. --as names a user whom every request from
this machine comes from, so that a browser opens the page; it needs the page
on a loopback address, and leaves requests from elsewhere as they are.

Ctrl-C stops the host, kube-controller-manager and the control plane, and
removes the kubeconfig and every other file the cluster wrote. The binaries
come from $KUBEBUILDER_ASSETS, else bin/k8s/` + local.AssetsVersion + ` in the source tree
(make envtest-assets builds them, kube-controller-manager included).`,
		Example: `  make local
  go run ./examples/host local --as alice@example.org
  go run ./examples/host local --config examples/host/config/lab-budgets.yaml --page-address 127.0.0.1:9090`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := demoOptions(cmd, app, g, f)
			if err != nil {
				return err
			}
			// Libraries that log through controller-runtime's or klog's
			// global logger get the same one as the host (see run).
			ctrl.SetLogger(o.Logger)
			if app.OwnsProcess {
				klog.SetLogger(o.Logger)
			}
			// Closing the terminal ends it as Ctrl-C does: kube-apiserver
			// and etcd run in process groups of their own, and would
			// outlive a process that the hang-up killed.
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGHUP)
			defer stop()
			return demo.Serve(ctx, demo.ServeOptions{Options: o, PageAddress: pageAddress, As: as})
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&pageAddress, "page-address", "127.0.0.1:8082", "where the tenant page listens")
	cmd.Flags().StringVar(&as, "as", "", "user whom the page takes every request from this machine to come from (a loopback page address only)")
	return cmd
}
