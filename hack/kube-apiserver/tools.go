//go:build tools

// Package tools pins the kube-apiserver and kube-controller-manager commands
// so that go.sum covers their builds.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
