package main

// This file holds the fault tests of leader election: two hosts with one
// leader, and a leader that loses its lease.

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/profilekit/profilekit/internal/testhost"
)

// TestFaultLeaderElection runs two hosts for one Lease: only the leader
// writes, and when it stops the other takes over and serves a new Profile.
func TestFaultLeaderElection(t *testing.T) {
	t.Parallel()
	shard := "leader-" + rand.String(5)
	prefix := "fault-" + shard + "-"
	cfg, reg := faultConfig(t, shard, "fault-leader-"+rand.String(5), 100)

	leader := startHost(t, "leader", env.Config, cfg, reg, true)
	before := prefix + "a"
	faultProfile(t, env.Client, before, shard, true)
	// Only a leader reconciles, so a converged Profile means it holds the Lease.
	waitConverged(t, env.Client, 30*time.Second, before)
	follower := startHost(t, "follower", env.Config, cfg, reg, true)

	second := prefix + "b"
	faultProfile(t, env.Client, second, shard, false)
	waitConverged(t, env.Client, 20*time.Second, second)
	// The follower has watched the Profiles for a while; give it time to
	// misbehave, then look at what it sent.
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		return slices.ContainsFunc(follower.log.all(), func(r string) bool { return strings.Contains(r, "/leases/") }),
			"the follower has not asked for the Lease yet"
	})
	time.Sleep(2 * time.Second)
	if w := follower.log.writes(); len(w) != 0 {
		t.Errorf("the follower wrote while the leader held the Lease:\n%s", strings.Join(w, "\n"))
	}
	if w := leader.log.writes(); !slices.ContainsFunc(w, func(r string) bool { return strings.Contains(r, "/namespaces/"+second+"/") }) {
		t.Errorf("the leader sent no write for %s:\n%s", second, strings.Join(w, "\n"))
	}

	stopped := time.Now()
	if err := leader.stop(); err != nil {
		t.Fatalf("leader: %v", err)
	}
	third := prefix + "c"
	faultProfile(t, env.Client, third, shard, true)
	waitConverged(t, env.Client, 30*time.Second, third)
	t.Logf("the follower converged %s %s after the leader stopped", third, time.Since(stopped).Round(time.Millisecond))
	follower.running(t)
	if w := follower.log.writes(); !slices.ContainsFunc(w, func(r string) bool { return strings.Contains(r, "/namespaces/"+third+"/") }) {
		t.Errorf("the new leader sent no write for %s:\n%s", third, strings.Join(w, "\n"))
	}
	if d := diffSets(wantObjects(map[string]bool{before: true, second: false, third: true}), ownedObjects(t, env.Client, prefix)); d != "" {
		t.Errorf("owned objects:%s", d)
	}
}

// TestFaultLeaderLost cuts the leader off the API server without letting it
// release the Lease, as a crash or a partition would: it stops on its own
// once it cannot renew the Lease, and the follower takes over when the Lease
// expires and serves the Profile created meanwhile. It takes the Lease's
// default 15s to expire.
func TestFaultLeaderLost(t *testing.T) {
	t.Parallel()
	shard := "lost-" + rand.String(5)
	prefix := "fault-" + shard + "-"
	cfg, reg := faultConfig(t, shard, "fault-lost-"+rand.String(5), 100)

	leader := startHost(t, "leader", env.Config, cfg, reg, true)
	first := prefix + "a"
	faultProfile(t, env.Client, first, shard, false)
	waitConverged(t, env.Client, 30*time.Second, first)
	follower := startHost(t, "follower", env.Config, cfg, reg, true)
	testhost.Eventually(t, 10*time.Second, func() (bool, string) {
		return slices.ContainsFunc(follower.log.all(), func(r string) bool { return strings.Contains(r, "/leases/") }),
			"the follower has not asked for the Lease yet"
	})

	cut := time.Now()
	leader.log.cut.Store(true)
	second := prefix + "b"
	faultProfile(t, env.Client, second, shard, true)
	waitConverged(t, env.Client, 40*time.Second, second)
	t.Logf("the follower converged %s %s after the leader was cut off", second, time.Since(cut).Round(time.Millisecond))

	if err := leader.stopped(t, 5*time.Second); err == nil || !strings.Contains(err.Error(), "leader election lost") {
		t.Errorf("the cut-off leader returned %v, want leader election lost", err)
	}
	follower.running(t)
	if w := follower.log.writes(); !slices.ContainsFunc(w, func(r string) bool { return strings.Contains(r, "/namespaces/"+second+"/") }) {
		t.Errorf("the new leader sent no write for %s:\n%s", second, strings.Join(w, "\n"))
	}
	if d := diffSets(wantObjects(map[string]bool{first: false, second: true}), ownedObjects(t, env.Client, prefix)); d != "" {
		t.Errorf("owned objects:%s", d)
	}
}
