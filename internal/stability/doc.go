// Package stability holds a test that keeps the "Stability" section of
// every package's doc.go true to what the package exports.
//
// A Stability section writes the Go names it classifies as doc links
// ([Name], or [Type.Member] for a method or field), first those stable under
// semver, then, after the word "Experimental", those free to change in a
// minor release. The test fails when a listed name is no longer exported,
// and when a package exports a name that neither list links. A section that
// has no Experimental list speaks of the package as a whole (generated
// code, an example, the Profile types) and is not checked name by name.
package stability
