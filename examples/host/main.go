// Command profilekit is the standalone host of profilekit plugins: it runs
// one controller per enabled plugin against a cluster (run), shows offline
// what the plugins would write (render), checks Profiles as admission would
// (validate), and runs everything on a local control plane (demo). It is
// package hostapp built with every plugin of package builtin; everything
// else is configuration (see README.md).
package main

import (
	"context"
	_ "embed"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

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

// defaultGCPercent is the host's GOGC when the environment sets none. Go
// collects garbage once the heap has grown by GOGC percent since the last
// collection, and the host's heap is mostly its cache, which lives as long
// as the process: at Go's 100 the process holds about twice its cache. At 50
// the benchmark's host used 17-27% less RSS for a little more CPU while
// Profiles change (see "Memory" in README.md); an idle host allocates little
// and collects seldom either way.
const defaultGCPercent = 50

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	a := app()
	a.OwnsProcess = true
	code := hostapp.Main(ctx, a, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

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
