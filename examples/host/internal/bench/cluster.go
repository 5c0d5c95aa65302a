package bench

// This file holds the benchmark's small helpers against the control plane:
// work in parallel, namespaces, resources of kinds, the selector of owned
// objects, and the revision measured.

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/examples/host/hostapp"
	"github.com/profilekit/profilekit/plugins"
)

// parallel runs fn for every index below n on workers goroutines, and
// returns the errors joined.
func parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	idx := make(chan int)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					if len(errs) < 10 {
						errs = append(errs, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		select {
		case idx <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(idx)
	wg.Wait()
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// createNamespaces creates the namespaces that the upstream controller
// would create, before any clock starts.
func (b *bench) createNamespaces(ctx context.Context, names []string) error {
	return parallel(ctx, len(names), driverWorkers, func(ctx context.Context, i int) error {
		err := b.driver.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[i]}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", names[i], err)
		}
		return nil
	})
}

// resourceOf returns the resource name (plural) of a kind.
func (b *bench) resourceOf(gvk schema.GroupVersionKind) (string, error) {
	m, err := b.driver.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return "", fmt.Errorf("resource of %s: %w", gvk, err)
	}
	return m.Resource.Resource, nil
}

// hostResources are the resources the host reads or writes: Profiles, the
// owned kinds, Events, and the kinds plugins watch.
func (b *bench) hostResources(d []schema.GroupVersionKind) map[string]bool {
	out := map[string]bool{"profiles": true, "events": true, "rolebindings": true}
	for _, gvk := range d {
		if r, err := b.resourceOf(gvk); err == nil {
			out[r] = true
		}
	}
	return out
}

// managedSelector selects every object profilekit manages.
func managedSelector() client.ListOption {
	return client.MatchingLabelsSelector{Selector: plugins.ManagedSelector()}
}

// revision returns the commit of the code that runs: the one the bench
// binary was built from (with "-dirty" when its tree had changes), or, for a
// binary without that record (go run), the source tree's. A bench built in
// one checkout may run from another; the tree then says nothing of it.
func revision(ctx context.Context, root string) string {
	if rev, modified := hostapp.Revision(); rev != "" {
		return shortRevision(rev, modified)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// shortRevision writes a commit as git describe --always --dirty does: its
// first seven digits, "-dirty" when the tree had changes.
func shortRevision(rev string, modified bool) string {
	rev = rev[:min(len(rev), 7)]
	if modified {
		rev += "-dirty"
	}
	return rev
}

// hostRevision returns the revision the host binary prints in its version
// command, "" when it prints none.
func hostRevision(ctx context.Context, binary string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "version").Output()
	if err != nil {
		return ""
	}
	return printedRevision(string(out))
}

// printedRevision returns the value of the "revision:" line of a version
// command's output (see hostapp), written as shortRevision writes it.
func printedRevision(out string) string {
	for line := range strings.Lines(out) {
		rev, ok := strings.CutPrefix(strings.TrimSpace(line), "revision:")
		if !ok {
			continue
		}
		rev, modified := strings.CutSuffix(strings.TrimSpace(rev), " (modified)")
		if rev == "" {
			return ""
		}
		return shortRevision(rev, modified)
	}
	return ""
}
