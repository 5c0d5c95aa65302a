package opa_test

import (
	"fmt"

	"github.com/profilekit/profilekit/opa"
)

// Decode reads the shape gateways publish: keys that are not buckets, such
// as httpapi, are ignored; a writer that also reads gets read-write access.
func ExampleDecode() {
	g, err := opa.Decode([]byte(`{
		"census": {"readers": ["team-a", "team-b"], "writers": ["team-b"], "spn": "sp-census", "name": "census-pv"},
		"httpapi": {"authz": {"allow": true}}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ns := range g.Namespaces() {
		for _, a := range g.For(ns) {
			fmt.Println(ns, a.Name, a.Volume, a.Mode)
		}
	}
	// Output:
	// team-a census census-pv ReadOnly
	// team-b census census-pv ReadWrite
}
