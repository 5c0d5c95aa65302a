package hostapp

// This file holds the tenure command: an administrator's view of which
// Profile names are held for their owners, and the hand-over of one.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

type tenureFlags struct {
	config     string
	kubeconfig string
}

func newTenureCommand(app App) *cobra.Command {
	f := &tenureFlags{}
	cmd := &cobra.Command{
		Use:   "tenure",
		Short: "List the Profile names held for their owners, or hand one over",
		Long: `A Profile name is not an identity across time: what the plugins with
outside state keep under a name (a cloud identity templated on it, a bucket
grant naming the namespace, a database named after it, retained volumes)
stays with the owner (spec.owner) who held the name, after the Profile is
deleted. A later Profile of the name with another owner gets none of it: its
plugins report Conflict, and the admission webhook refuses it. The same
owner coming back gets everything back.

The host keeps each name's tenure in a ConfigMap profilekit-tenure-<name> in
its records' namespace (the host's namespace). "tenure release NAME" deletes
it: the next Profile of the name, of any owner, takes the name and what is
kept under it. Release only once what the earlier owner kept there is
theirs no more (data handed over or deleted, grants withdrawn).`,
		Args: cobra.NoArgs,
	}
	fl := cmd.PersistentFlags()
	fl.StringVar(&f.config, "config", "", "host configuration file (required): its records' namespace")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file of the cluster; empty uses $KUBECONFIG, the in-cluster service account, then ~/.kube/config")
	cmd.AddCommand(&cobra.Command{
		Use:     "list",
		Short:   "List the held names, and whether a Profile of the name is served",
		Example: `  profilekit tenure list --config /etc/profilekit/host.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ns, err := tenureClient(app, f)
			if err != nil {
				return err
			}
			return listTenures(cmd.Context(), c, ns, cmd.OutOrStdout())
		},
	}, &cobra.Command{
		Use:   "release NAME",
		Short: "Hand the name NAME over: its next Profile, of any owner, takes it",
		Example: `  profilekit tenure release team-x --config /etc/profilekit/host.yaml
  kubectl -n profilekit-system delete configmap profilekit-tenure-team-x   # the same`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := tenureClient(app, f)
			if err != nil {
				return err
			}
			return releaseTenure(cmd.Context(), c, ns, args[0], cmd.OutOrStdout())
		},
	})
	return cmd
}

func tenureClient(app App, f *tenureFlags) (client.Client, string, error) {
	cfg, _, err := loadConfig(app, f.config)
	if err != nil {
		return nil, "", err
	}
	s, err := server.NewScheme()
	if err != nil {
		return nil, "", err
	}
	c, err := clusterClient(f.kubeconfig, s)
	return c, cfg.RecordsNamespace(), err
}

// listTenures prints each held name, since when, and whether a Profile of
// the name exists and its owner holds the name.
func listTenures(ctx context.Context, c client.Client, ns string, out io.Writer) error {
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelRole: outside.RoleTenure}); err != nil {
		return fmt.Errorf("list tenures in %s: %w", ns, err)
	}
	slices.SortFunc(list.Items, func(a, b corev1.ConfigMap) int { return strings.Compare(a.Name, b.Name) })
	ten := outside.Tenures{Reader: c, Namespace: ns}
	fmt.Fprintf(out, "%-40s %-21s %s\n", "NAME", "HELD SINCE", "PROFILE")
	for _, cm := range list.Items {
		name := cm.Labels[plugins.LabelProfile]
		state := "none (the name waits for its owner, or a release)"
		var p kubeflowv1.Profile
		err := c.Get(ctx, types.NamespacedName{Name: name}, &p)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("read the Profile %s: %w", name, err)
		case ten.Check(ctx, &p) != nil:
			state = "of another owner: its plugins with outside state report Conflict"
		default:
			state = "of the owner who holds the name"
		}
		fmt.Fprintf(out, "%-40s %-21s %s\n", name, cm.CreationTimestamp.UTC().Format(time.RFC3339), state)
	}
	return nil
}

// releaseTenure deletes the name's tenure, and asks the Profile of the name,
// if there is one, to be passed over again at once.
func releaseTenure(ctx context.Context, c client.Client, ns, name string, out io.Writer) error {
	released, err := outside.Tenures{Reader: c, Writer: c, Namespace: ns}.Release(ctx, name)
	if err != nil {
		return err
	}
	if !released {
		fmt.Fprintf(out, "no tenure of the name %s in %s: nothing to release\n", name, ns)
		return nil
	}
	fmt.Fprintf(out, "released the name %s: its next pass gives it to the owner of the Profile of that name\n", name)
	var p kubeflowv1.Profile
	if err := c.Get(ctx, types.NamespacedName{Name: name}, &p); err != nil {
		return client.IgnoreNotFound(err)
	}
	patch := client.MergeFrom(p.DeepCopy())
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[plugins.AnnotationReverify] = time.Now().UTC().Format(time.RFC3339Nano)
	if err := c.Patch(ctx, &p, patch); err != nil {
		return fmt.Errorf("ask for a pass over the Profile %s (the name is released; its next resync takes it): %w", name, err)
	}
	return nil
}
