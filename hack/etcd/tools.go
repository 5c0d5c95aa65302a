//go:build tools

// Package tools pins the etcd server command so that go.sum covers its build.
package tools

import _ "go.etcd.io/etcd/server/v3"
