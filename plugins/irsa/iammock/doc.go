// Package iammock holds go.uber.org/mock doubles of the irsa plugin's
// IAM interface, for tests that cannot call the cloud (make
// generate-mocks writes them).
//
// # Stability
//
// Not covered by semver: generated code that changes whenever the interface
// or mockgen does.
package iammock
