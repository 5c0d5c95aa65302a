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

// revision returns the VCS revision recorded at build time, if any, as the
// version command prints it.
func revision() string {
	rev, modified := Revision()
	if rev != "" && modified {
		rev += " (modified)"
	}
	return rev
}

// Revision returns the commit the running binary was built from and
// whether its source tree had changes, as the Go build recorded them; ""
// when it recorded none (go run, or a build with -buildvcs=false).
func Revision() (rev string, modified bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", false
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	return rev, modified
}
