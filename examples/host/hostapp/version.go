package hostapp

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCommand(app App) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the Go version and the plugins built in",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s %s\n", cmd.Root().Name(), Version(app.Version))
			fmt.Fprintf(w, "go: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			rev := app.Revision
			if rev == "" {
				rev = revision()
			}
			if rev != "" {
				fmt.Fprintf(w, "revision: %s\n", rev)
			}
			reg, err := registry(app)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "plugins: %v\n", reg.Kinds())
			return nil
		},
	}
}

// Version returns linked, the version set at link time, or else the main
// module's version from the build information ("(devel)" for a source build).
func Version(linked string) string {
	if linked != "" {
		return linked
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// revision returns the VCS revision recorded at build time, if any.
func revision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = " (modified)"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}
