// Command custom-plugin is the profilekit host built with one plugin of
// its own, welcome (package welcome), beside every plugin profilekit ships:
// the whole path from a plugin package to a binary with everything the
// profilekit binary has (run with the configuration file, the admission
// webhook, metrics and leader election; render; validate).
//
//	go run ./examples/custom-plugin render --config examples/custom-plugin/host.yaml -f examples/custom-plugin/testdata/profile.yaml
//	go run ./examples/custom-plugin run --config examples/custom-plugin/host.yaml --leader-elect=false
package main

import (
	"github.com/profilekit/profilekit/examples/custom-plugin/welcome"
	"github.com/profilekit/profilekit/examples/host/builtin"
	"github.com/profilekit/profilekit/examples/host/hostapp"
)

func main() { hostapp.Run(app()) }

// app is this binary: profilekit's plugins and welcome. A configuration
// file enables any of them by its kind.
func app() hostapp.App {
	return hostapp.App{
		Name:        "custom-plugin",
		Definitions: append(builtin.Definitions(), welcome.Definition()),
	}
}
