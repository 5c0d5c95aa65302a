// Command hello stands in for the host binary in the image builder's tests:
// it prints what the builder links into it, as profilekit version does.
package main

import "fmt"

var version, revision string

func main() {
	fmt.Printf("hello %s\nrevision: %s\n", version, revision)
}
