// Command profilekit is the standalone host of profilekit plugins: it runs
// one controller per enabled plugin against a cluster (run), shows offline
// what the plugins would write (render), checks Profiles as admission would
// (validate), and runs everything on a local control plane (demo), or keeps
// such a cluster running with the tenant page until Ctrl-C (local). It is
// package hostapp built with every plugin of package builtin; everything
// else is configuration (see README.md).
package main

import (
	_ "embed"

	"github.com/profilekit/profilekit/examples/host/builtin"
	"github.com/profilekit/profilekit/examples/host/hostapp"
)

// version and revision are set at link time:
//
//	go build -ldflags "-X main.version=v0.3.0 -X main.revision=$(git rev-parse HEAD)" ./examples/host
//
// Without them, they come from the build information.
var version, revision string

// demoConfig is the configuration `profilekit demo` runs with unless --config
// says otherwise: the example for a cluster with Istio, which enables every
// plugin built in.
//
//go:embed config/istio.yaml
var demoConfig []byte

func main() { hostapp.Run(app()) }

// app describes this binary to the command line.
func app() hostapp.App {
	return hostapp.App{
		Definitions:    builtin.Definitions(),
		Version:        version,
		Revision:       revision,
		DemoConfig:     demoConfig,
		DemoConfigName: "examples/host/config/istio.yaml (built in)",
	}
}
