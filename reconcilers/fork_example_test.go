package reconcilers_test

import (
	"fmt"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/reconcilers"
)

// The profilekit side of a fork of the upstream controller (see
// examples/kubeflow-fork for the lines in upstream's files): one Fork
// serves the plugins, set up from the fork's SetupWithManager with the
// fork's controller builder, and appended once to the plugins upstream's
// GetPluginSpec returns, which lets the entries of the Fork's kinds pass.
func ExampleFork() {
	fork, err := reconcilers.NewFork(
		reconcilers.NewAdapter[*ProfileReconciler, *kubeflowv1.Profile](quotas.Definition(),
			reconcilers.AdapterDefaults([]byte(`{"hard":{"limits.cpu":"16"}}`))),
		reconcilers.NewAdapter[*ProfileReconciler, *kubeflowv1.Profile](limitrange.Definition()),
	)
	if err != nil {
		fmt.Println(err)
		return
	}

	// In the fork's SetupWithManager, before c.Complete(r), with c the
	// fork's controller builder:
	//
	//	if err := fork.SetupWithManager(mgr, c); err != nil {
	//		return err
	//	}

	// In GetPluginSpec: entries of the Fork's kinds pass, and the Fork
	// comes last.
	var ps []Plugin
	for _, kind := range []string{quotas.Kind, "WorkloadIdentity"} {
		if fork.Serves(kind) {
			continue
		}
		fmt.Println("upstream's switch picks", kind)
	}
	ps = append(ps, fork)
	fmt.Println(len(ps), "profilekit plugin for", len(fork.Definitions()), "kinds")
	// Output:
	// upstream's switch picks WorkloadIdentity
	// 1 profilekit plugin for 2 kinds
}
