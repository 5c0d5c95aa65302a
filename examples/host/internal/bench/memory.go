package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// memory reads the process's heap and RSS with the host converged, then
// adds unrelated Secrets and ConfigMaps (no profilekit label) and reads them
// again. The host's cache keeps only labelled objects, so they should not
// change its memory. The process also holds the benchmark's own client and
// bookkeeping, which are small next to the host's caches.
//
// When c is not nil, the host also runs alone in a child process, and its
// RSS is read from /proc the same way: that figure is the host's alone.
func (b *bench) memory(ctx context.Context, h *host, c *child, namespaces []string) error {
	fmt.Fprintf(b.Out, "\n== memory: before and after %d unrelated Secrets and ConfigMaps\n", b.Unrelated)
	before, err := readMemory()
	if err != nil {
		return err
	}
	var cBefore memReading
	if c != nil {
		if cBefore, err = c.read(ctx); err != nil {
			return err
		}
		if b.HeapProfile != "" {
			if err := c.saveHeapProfile(ctx, b.HeapProfile+".host"); err != nil {
				return err
			}
		}
	}
	before0 := h.counter.snapshot()
	data := strings.Repeat("x", 1024)
	start := time.Now()
	err = parallel(ctx, b.Unrelated, driverWorkers, func(ctx context.Context, i int) error {
		meta := metav1.ObjectMeta{
			Namespace: namespaces[i%len(namespaces)],
			Name:      fmt.Sprintf("unrelated-%05d", i),
			Labels:    map[string]string{"app": "unrelated"},
		}
		var err error
		if i%2 == 0 {
			err = b.driver.Create(ctx, &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"data": data}})
		} else {
			err = b.driver.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"data": data}})
		}
		if err != nil {
			return fmt.Errorf("create unrelated object %s/%s: %w", meta.Namespace, meta.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(b.Out, "created %d unrelated objects in %s; waiting 10s\n", b.Unrelated, time.Since(start).Round(time.Millisecond))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
	}
	after, err := readMemory()
	if err != nil {
		return err
	}
	if c != nil {
		cAfter, err := c.read(ctx)
		if err != nil {
			return err
		}
		b.res.HostProcess = &HostProcess{
			RSSMiB: mib(cBefore.rss), HeapInuseMiB: mib(cBefore.heap),
			RSSAfterMiB: mib(cAfter.rss), HeapInuseAfterMiB: mib(cAfter.heap),
			RSSGrowth: float64(cAfter.rss) / float64(cBefore.rss),
		}
		b.res.HostProcess.HeapAllocMiB = mib(cBefore.alloc)
		if b.res.Objects > 0 {
			b.res.HostProcess.HeapPerObjectKiB = float64(cBefore.heap) / 1024 / float64(b.res.Objects)
			b.res.HostProcess.HeapAllocPerObjectKiB = float64(cBefore.alloc) / 1024 / float64(b.res.Objects)
		}
		fmt.Fprintf(b.Out, "host process alone: RSS %.1f -> %.1f MiB (x%.3f), heap in use (after GC) %.1f -> %.1f MiB\n",
			mib(cBefore.rss), mib(cAfter.rss), b.res.HostProcess.RSSGrowth, mib(cBefore.heap), mib(cAfter.heap))
	}
	seen := h.counter.snapshot().minus(before0).only(map[string]bool{"secrets": true, "configmaps": true})
	b.res.Memory = Memory{
		HeapInuseMiB: mib(before.heap), RSSMiB: mib(before.rss),
		HeapInuseAfterMiB: mib(after.heap), RSSAfterMiB: mib(after.rss),
		HeapGrowth: float64(after.heap) / float64(before.heap),
		Unrelated:  b.Unrelated, HostRequestsForUnrelated: seen.total(),
		InProcess: true,
	}
	fmt.Fprintf(b.Out, "heap in use %.1f -> %.1f MiB (x%.3f), RSS %.1f -> %.1f MiB; host requests for Secrets/ConfigMaps: %d\n",
		b.res.Memory.HeapInuseMiB, b.res.Memory.HeapInuseAfterMiB, b.res.Memory.HeapGrowth,
		b.res.Memory.RSSMiB, b.res.Memory.RSSAfterMiB, seen.total())
	if b.HeapProfile != "" {
		return writeHeapProfile(b.HeapProfile)
	}
	return nil
}

// writeHeapProfile writes the heap profile of this process to path, after a
// collection, so that it shows what is live.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return f.Close()
}

// memReading is a process's heap in use (spans holding live objects), its
// live heap (HeapAlloc; read for the host process only) and its RSS.
type memReading struct{ heap, alloc, rss uint64 }

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// readMemory collects garbage twice (the second pass frees what finalizers
// released) and reads HeapInuse and the process's resident set.
func readMemory() (memReading, error) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, err := statusRSS("/proc/self/status")
	if err != nil {
		return memReading{}, err
	}
	return memReading{heap: ms.HeapInuse, rss: rss}, nil
}

// statusRSS reads a process's resident set size (VmRSS) from its /proc
// status file.
func statusRSS(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read RSS: %w", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse VmRSS %q: %w", rest, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("no VmRSS in %s", path)
}
