package testenv

import (
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/profilekit/profilekit/internal/controllermanager"
)

// ControllerManagerBinary is kube-controller-manager's file name in the
// assets folder, built by make (make kube-controller-manager).
const ControllerManagerBinary = controllermanager.Binary

// ControllerManagerControllers are the controllers the test control plane
// runs: garbage collection (owner references), namespace deletion,
// service-account tokens, and persistent-volume binding with pvc- and
// pv-protection.
var ControllerManagerControllers = []string{
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-token-controller",
	"persistentvolume-binder-controller",
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
}

// controllerFlags are the flags a controller gets when a test asks for it
// in Options.ExtraControllers: short periods, so that tests see its work
// within seconds.
var controllerFlags = map[string][]string{
	"resourcequota-controller": {
		// A full recount of every quota every few seconds; changes to a
		// quota's spec and deleted pods are synced at once regardless.
		"--resource-quota-sync-period=5s",
		"--concurrent-resource-quota-syncs=10",
	},
}

// startControllerManager starts kube-controller-manager from assets against
// env's API server with the given controllers, with short periods so that
// tests see deletions within seconds.
func startControllerManager(assets string, env *envtest.Environment, controllers []string) (*controllermanager.Process, error) {
	// The controllers share one client. At its default rate of 20 requests
	// a second, the namespace controller deleting the namespaces of tests
	// run side by side (a few dozen requests each) holds volume binding
	// back for tens of seconds, and the quota controller writing 1,000 new
	// quotas' status takes 50 s.
	args := []string{"--namespace-sync-period=10s", "--concurrent-gc-syncs=5", "--v=1", "--kube-api-qps=200", "--kube-api-burst=300"}
	for _, c := range controllers {
		args = append(args, controllerFlags[c]...)
	}
	return controllermanager.Start(controllermanager.Options{Assets: assets, Env: env, Controllers: controllers, Args: args})
}
