// Package hostapp builds the profilekit binary from a list of plugin
// Definitions: the commands run (one controller per enabled plugin, with
// the admission webhook, metrics, probes and leader election), render,
// validate, diff, release, tenure, demo, local and version, all configured
// by the host configuration file that examples/host/docs/configuration.md
// describes.
//
// The profilekit binary is built with it and [builtin.Definitions]. A
// platform team with a plugin of its own builds the same binary with its
// plugin added, and keeps everything the host gives: the configuration
// file, render and validate, the webhook, the Helm chart's flags.
//
//	func main() {
//		hostapp.Run(hostapp.App{
//			Name:        "platform-profiles",
//			Definitions: append(builtin.Definitions(), welcome.Definition()),
//		})
//	}
//
// examples/custom-plugin is such a binary, tested end to end.
//
// # Stability
//
// Stable under semver: [App] and its fields, [Run], [Main], and the commands,
// flags and exit codes they give (each documented by its --help).
// Experimental, and free to change in a minor release: [NewCommand], whose
// cobra type follows cobra's releases, [Version], [Revision] and
// [DefaultGCPercent].
//
// [builtin.Definitions]: https://pkg.go.dev/github.com/profilekit/profilekit/examples/host/builtin#Definitions
package hostapp
