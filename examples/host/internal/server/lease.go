package server

// This file holds the host's Lease: the lock its leader election takes, and
// its release when the host stops as it takes it.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
)

// leaseLock returns the Lease lock of the host's leader election, as the
// manager would make it (an identity of the host name and a UUID, in the
// host's namespace, a client whose requests end within half the renew
// deadline, an Event when the replica leads), and the broadcaster of its
// Events, which leasingManager starts and shuts down.
func leaseLock(restCfg *rest.Config, cfg *hostconfig.Config, s *runtime.Scheme, renew time.Duration) (resourcelock.Interface, *leaseEvents, error) {
	ns := cfg.HostNamespace()
	if ns == "" {
		return nil, nil, errors.New("leader election: no namespace for the Lease: set leaderElection.namespace when the host runs out of a cluster")
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, nil, fmt.Errorf("leader election identity: %w", err)
	}
	id := host + "_" + string(uuid.NewUUID())
	lc := rest.AddUserAgent(rest.CopyConfig(restCfg), "leader-election")
	lc.Timeout = max(renew/2, time.Second)
	core, err := corev1client.NewForConfig(lc)
	if err != nil {
		return nil, nil, fmt.Errorf("leader election client: %w", err)
	}
	coordination, err := coordinationv1client.NewForConfig(lc)
	if err != nil {
		return nil, nil, fmt.Errorf("leader election client: %w", err)
	}
	events := &leaseEvents{broadcaster: record.NewBroadcaster(), sink: &corev1client.EventSinkImpl{Interface: core.Events(ns)}}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, cfg.LeaderElection.ID, core, coordination,
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: events.broadcaster.NewRecorder(s, corev1.EventSource{Component: id})})
	if err != nil {
		return nil, nil, fmt.Errorf("leader election lock: %w", err)
	}
	return lock, events, nil
}

// leaseEvents sends the leader election's Events to the API server while
// the manager runs.
type leaseEvents struct {
	broadcaster record.EventBroadcaster
	sink        record.EventSink
}

// leasingManager is a manager that, once stopped, makes sure it does not
// hold its Lease. The leader election releases the Lease it knows it holds
// (LeaderElectionReleaseOnCancel), but not one it took as the stop came:
// the request that created or took the Lease reached the API server, and
// its answer came back after the stop had cancelled it. Without the check,
// that Lease would stay held by a stopped replica for the lease duration,
// and the next replica would wait that long.
type leasingManager struct {
	manager.Manager
	lock   resourcelock.Interface
	events *leaseEvents
	// timeout bounds the release.
	timeout time.Duration
}

// Start runs the manager until ctx ends, then releases the Lease if it is
// still held under the manager's identity.
func (m leasingManager) Start(ctx context.Context) error {
	m.events.broadcaster.StartRecordingToSink(m.events.sink)
	defer m.events.broadcaster.Shutdown()
	err := m.Manager.Start(ctx)
	if ctx.Err() == nil {
		// The manager ended on its own (a lost Lease among the causes):
		// what it holds is its leader election's to say.
		return err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.timeout)
	defer cancel()
	if rerr := releaseHeld(rctx, m.lock); rerr != nil {
		m.GetLogger().Info("the Lease may still be held until it expires", "reason", rerr.Error())
	}
	return err
}

// releaseHeld gives the Lease up when lock's identity holds it, as the
// leader election releases it: no holder, a duration of one second.
func releaseHeld(ctx context.Context, lock resourcelock.Interface) error {
	held, _, err := lock.Get(ctx)
	if err != nil {
		return fmt.Errorf("read the Lease: %w", err)
	}
	if held.HolderIdentity != lock.Identity() {
		return nil
	}
	now := metav1.Now()
	return lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaseDurationSeconds: 1,
		AcquireTime:          now,
		RenewTime:            now,
		LeaderTransitions:    held.LeaderTransitions,
	})
}
