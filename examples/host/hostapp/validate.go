package hostapp

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/profilekit/profilekit/examples/host/internal/admission"
)

func newValidateCommand(app App) *cobra.Command {
	var config string
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
a CI pipeline can check Profiles before they are committed.`,
		Example: `  profilekit validate --config host.yaml -f profiles/team-a.yaml
  cat profiles/*.yaml | profilekit validate --config host.yaml -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := readOffline(cmd, app, config, files)
			if err != nil {
				return err
			}
			v := admission.New(in.cfg, in.reg, in.scheme)
			denied := 0
			var out strings.Builder
			for _, p := range in.profiles {
				reasons, warnings := v.Decide(cmd.Context(), nil, p)
				for _, w := range warnings {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: profile %s: %s\n", p.Name, w)
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
	return cmd
}
