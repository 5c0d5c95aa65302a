package main

// This file holds the second check of the host's RBAC: every rule a
// deployment grants the host is needed by some request of some test. The
// tests of this package (one test binary) run their hosts under the chart's
// RBAC (rbac_chart_test.go) and add to one record (rbac_use_test.go);
// TestMain calls checkRBACUse once they all ran. It prints the rules no
// request needed, and fails the package when one of them is not in
// keptUnused below, each with the reason it is kept, or when a kept rule is
// granted by no deployment of the tests any more. A kept rule that some run
// uses after all (an Event repeated soon enough to be patched) is only
// reported: what a test needs by chance is not what it needs. It fails
// only when every test ran (no -run), or with -rbac.unused, since a part
// of the tests uses only part of the rules:
//
//	go test ./examples/host/ -run 'TestFault|TestRollout' -rbac.unused

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
)

var rbacUnusedFlag = flag.Bool("rbac.unused", false, "fail when a rule the chart grants the host in the tests that ran is used by none of them and not kept in keptUnused")

// keptUnused are the rules the chart grants that no test needs, by grant
// key (grant.key), and why each is kept.
var keptUnused = map[string]string{
	// gitea's banner (a ConfigMap in each Profile's namespace) needs
	// PostgreSQL, which no host test here starts (gitea's own suite does);
	// the configurations the host tests run replicate Secrets only.
	"ClusterRole profilekit: create configmaps": gitea,
	"ClusterRole profilekit: get configmaps":    gitea,
	"ClusterRole profilekit: patch configmaps":  gitea,

	// A Profile may ask the rbac plugin for a binding to any role of the
	// configuration's allowedRoles; the tests' Profiles ask for none.
	"ClusterRole profilekit: bind clusterroles.rbac.authorization.k8s.io edit": "rbac's allowedRoles: a binding a Profile asks for",

	// Pruning: an object the Profile no longer wants is deleted. The host
	// tests take limit ranges, Istio routes, egress, replicated Secrets,
	// claims and Applications away (checkEveryPluginRevokes), not these.
	"ClusterRole profilekit: delete authorizationpolicies.security.istio.io": pruned,
	"ClusterRole profilekit: delete poddefaults.kubeflow.org":                pruned,
	"ClusterRole profilekit: delete rolebindings.rbac.authorization.k8s.io":  pruned,
	"ClusterRole profilekit: delete roles.rbac.authorization.k8s.io":         pruned,
	"ClusterRole profilekit: delete serviceaccounts":                         pruned,
	"ClusterRole profilekit: delete servicemonitors.monitoring.coreos.com":   pruned,
	// core deletes the namespace it made when its Profile goes; the
	// move-over tests delete no Profile.
	"ClusterRole profilekit: delete namespaces": pruned,
	// The volumes sweeper deletes released volumes after retainFor, and
	// blobcsi a volume once its claim is gone, which kube-controller-manager's
	// pvc-protection allows: no host test here runs either.
	"ClusterRole profilekit: delete persistentvolumes": "volumes' sweeper and blobcsi's volume removal",

	// The Applier reads an object of the wanted name from the API server
	// when its cache does not hold it as ours: one someone else made, or a
	// cache behind the host's own write (plugins/apply, read.go). The host
	// tests meet that for some kinds and not these.
	"ClusterRole profilekit: get destinationrules.networking.istio.io":   liveRead,
	"ClusterRole profilekit: get namespaces":                             liveRead,
	"ClusterRole profilekit: get persistentvolumes":                      liveRead,
	"ClusterRole profilekit: get poddefaults.kubeflow.org":               liveRead,
	"ClusterRole profilekit: get rolebindings.rbac.authorization.k8s.io": liveRead,
	"ClusterRole profilekit: get roles.rbac.authorization.k8s.io":        liveRead,
	"ClusterRole profilekit: get serviceaccounts":                        liveRead,
	"ClusterRole profilekit: get serviceentries.networking.istio.io":     liveRead,
	"ClusterRole profilekit: get servicemonitors.monitoring.coreos.com":  liveRead,
	"ClusterRole profilekit: get virtualservices.networking.istio.io":    liveRead,
	"Role profilekit-argocd: get applications.argoproj.io":               liveRead,

	// An Event that repeats within its series' window is patched (a count),
	// not created again; no test repeats one soon enough.
	"ClusterRole profilekit: patch events.events.k8s.io": "a repeated Event's series",
	"Role profilekit-leader-election: patch events":      "a repeated leader election Event",

	// A ledger of deletions is patched from the second deletion of a
	// window on; the host tests delete in one batch.
	"Role profilekit-ledger: patch configmaps by name": "the second deletion of a window",
	// A record is deleted once its Profile's outside state is all gone; the
	// plugins that get that far on the host tests' deleted Profile wait for
	// Argo CD or kube-controller-manager, which those tests do not run.
	"Role profilekit-records: delete configmaps": "an outside-state record emptied",
	// The host renews its certificate 90 days before it expires.
	"Role profilekit-webhook-certificate: update secrets by name": "the webhook certificate's renewal",
}

// The reasons that keptUnused shares.
const (
	gitea    = "gitea's banner ConfigMap, and replicate's ConfigMap copies"
	pruned   = "pruning an object the Profile no longer wants"
	liveRead = "the Applier's read of an object its cache does not hold as ours"
)

// checkRBACUse reports the rules no test needed and returns the package's
// exit code: code, or 1 when the check fails.
func checkRBACUse(code int) int {
	unused, used := rbacUse.unused()
	if len(unused)+len(used) == 0 {
		return code
	}
	all := true
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() != "" {
		all = false
	}
	var unexplained, kept, usedKept, stale []string
	for _, k := range unused {
		if why, ok := keptUnused[k]; ok {
			kept = append(kept, k+" (kept: "+why+")")
		} else {
			unexplained = append(unexplained, k)
		}
	}
	for k := range keptUnused {
		switch {
		case slices.Contains(used, k):
			usedKept = append(usedKept, k)
		case all && !slices.Contains(unused, k):
			stale = append(stale, k+": kept as unused, and granted by no deployment of the tests")
		}
	}
	slices.Sort(stale)
	slices.Sort(usedKept)
	var b strings.Builder
	fmt.Fprintf(&b, "rbac: the hosts under the deployments' RBAC used %d of %d rules granted to them\n", len(used), len(used)+len(unused))
	for _, k := range kept {
		fmt.Fprintf(&b, "rbac: unused, %s\n", k)
	}
	for _, k := range usedKept {
		fmt.Fprintf(&b, "rbac: kept in keptUnused, and used in this run: %s\n", k)
	}
	for _, k := range unexplained {
		fmt.Fprintf(&b, "rbac: unused, and not in keptUnused: %s\n", k)
	}
	for _, k := range stale {
		fmt.Fprintf(&b, "rbac: stale keptUnused entry: %s\n", k)
	}
	fmt.Print(b.String())
	if code == 0 && (all || *rbacUnusedFlag) && len(unexplained)+len(stale) > 0 {
		fmt.Fprintln(os.Stderr, "FAIL: rules granted to the host that no test used: remove them from the chart, use them in a test, or keep them in keptUnused (examples/host/rbac_unused_test.go) with the reason")
		return 1
	}
	return code
}
