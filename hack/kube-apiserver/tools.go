//go:build tools

// Package tools pins the kube-apiserver command so that go.sum covers its build.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
