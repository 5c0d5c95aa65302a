package hostapp

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/profilekit/profilekit/examples/host/internal/admission"
	"github.com/profilekit/profilekit/plugins/outside"
)

func newValidateCommand(app App, g *globals) *cobra.Command {
	var config, kubeconfig string
	var files []string
	cmd := &cobra.Command{
		Use:   "validate --config host.yaml -f profile.yaml",
		Short: "Check Profiles as the admission webhook would, without a cluster",
		Long: `validate decides on each Profile exactly as the host's admission webhook
would on its creation: every plugin the host configured by --config runs for
it offline, and a Profile whose plugin spec or override labels a plugin
refuses is reported with the message that plugin's condition would carry.
Both kubeflow.org/v1 and kubeflow.org/v1beta1 Profiles are read.

It prints one line per Profile on stdout (admitted or denied, with the
reasons), warnings on stderr, and exits 1 when any Profile is denied, so that
a CI pipeline can check Profiles before they are committed.

With --kubeconfig it also reads, and never writes, what the webhook reads
in the host's records namespace: a Profile naming a cloud identity another
Profile holds is denied, and so is one whose name is held for another
owner. Without it, those two checks are left to the webhook and the host.`,
		Example: `  profilekit validate --config host.yaml -f profiles/team-a.yaml
  cat profiles/*.yaml | profilekit validate --config host.yaml -f -
  profilekit validate --config host.yaml -f team-x.yaml --kubeconfig ~/.kube/prod`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := readOffline(cmd, app, config, files)
			if err != nil {
				return err
			}
			var opts []admission.Option
			if kubeconfig != "" {
				c, err := clusterClient(kubeconfig, in.scheme)
				if err != nil {
					return err
				}
				ns := in.cfg.RecordsNamespace()
				opts = append(opts, admission.WithClaims(c, ns), admission.WithTenures(outside.Tenures{Reader: c, Namespace: ns}))
			}
			v := admission.New(in.cfg, in.reg, in.scheme, opts...)
			denied := 0
			var out strings.Builder
			bar := g.progress(cmd, "Profiles", len(in.profiles))
			stderr := bar.Above(cmd.ErrOrStderr())
			for _, p := range in.profiles {
				reasons, warnings := v.Decide(cmd.Context(), nil, p)
				bar.Add(1)
				for _, w := range warnings {
					fmt.Fprintf(stderr, "warning: profile %s: %s\n", p.Name, w)
				}
				if len(reasons) == 0 {
					fmt.Fprintf(&out, "profile %s: admitted\n", p.Name)
					continue
				}
				denied++
				fmt.Fprintf(&out, "profile %s: denied\n", p.Name)
				for _, r := range reasons {
					fmt.Fprintf(&out, "  %s\n", strings.ReplaceAll(r, "\n", "\n    "))
				}
			}
			bar.Done()
			if _, err := fmt.Fprint(cmd.OutOrStdout(), out.String()); err != nil {
				return err
			}
			if denied > 0 {
				return fmt.Errorf("%d of %d Profiles denied", denied, len(in.profiles))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "host configuration file (required)")
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "file or folder of Profile YAML documents, or - for stdin; repeatable")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster whose claims and name tenures to read (read only); empty checks offline alone")
	return cmd
}
