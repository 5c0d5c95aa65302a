// Package builtin lists the plugins the profilekit binary is built with, so
// that a binary of one's own can offer them beside its own plugins:
//
//	hostapp.Main(ctx, hostapp.App{
//		Definitions: append(builtin.Definitions(), welcome.Definition()),
//	}, os.Args[1:], os.Stdout, os.Stderr)
//
// # Stability
//
// Stable under semver: [Definitions]. A plugin added to the list is a minor
// change; one removed is a breaking one, named in CHANGELOG.md.
// Experimental: nothing else is exported.
package builtin
