package hostconfig_test

import (
	"fmt"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/quotas"
)

// Every problem in a file is reported at once, each with the file, the field
// path and what is wrong; plugin defaults are checked by the plugin.
func ExampleParse_errors() {
	reg, _ := plugins.NewRegistry(quotas.Definition())
	_, err := hostconfig.Parse("host.yaml", []byte(`
resyncPeriod: 10 minutes
plugins:
  quotas:
    enabled: listed
    selector: {matchLabels: {team: a}}
    defaults:
      caps: {limits.cpu: "-1"}
  quota: {}
`), reg)
	fmt.Println(err)
	// Output:
	// host.yaml: resyncPeriod: want a duration such as 10m: time: unknown unit " minutes" in duration "10 minutes"
	// host.yaml: plugins.quota: unknown plugin kind; this host knows quotas
	// host.yaml: plugins.quotas.selector: only narrows enabled: all, and enabled is listed
	// host.yaml: plugins.quotas.defaults: plugin quotas: host defaults: caps[limits.cpu]=-1 is negative
}

// A plugin enabled for all Profiles, with an opt-out label.
func ExampleConfig_Section() {
	reg, _ := plugins.NewRegistry(quotas.Definition())
	cfg, err := hostconfig.Parse("host.yaml", []byte(`
plugins:
  quotas:
    enabled: all
    selector:
      matchExpressions:
      - {key: profilekit.dev/quotas, operator: NotIn, values: ["off"]}
`), reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	sec, on := cfg.Section("quotas")
	fmt.Println(on, sec.Enabled, sec.Retention, sec.Concurrency)
	fmt.Println(sec.Applies(false, map[string]string{"team": "a"}))
	fmt.Println(sec.Applies(false, map[string]string{"profilekit.dev/quotas": "off"}))
	fmt.Println(sec.Applies(true, map[string]string{"profilekit.dev/quotas": "off"}))
	// Output:
	// true all Retain 16
	// true
	// false
	// true
}
