package testenv

import (
	"flag"
	"sync"
	"time"
)

// binaryStart is about when this test binary started; go test's -timeout
// counts from a moment just after it.
var binaryStart = time.Now()

// deadlineMargin is how long before the -timeout panic the servers stop:
// enough for kube-apiserver, etcd or PostgreSQL to stop and their folders
// to go. A timeout shorter than four margins gets a quarter of itself, so
// that a short one does not stop the servers as they start.
const deadlineMargin = 20 * time.Second

// stopBeforeTimeout runs stop once, deadlineMargin before the test binary's
// -test.timeout fires, unless the returned func runs it first. The timeout's
// panic runs no deferred call and no Cleanup: without this, a package that
// runs out of time leaves its servers running, and their data folders on
// disk, for every package the run has still to test.
func stopBeforeTimeout(stop func() error) func() error {
	var (
		once sync.Once
		err  error
	)
	run := func() error {
		once.Do(func() { err = stop() })
		return err
	}
	f := flag.Lookup("test.timeout")
	if f == nil {
		return run
	}
	if !flag.Parsed() {
		// Start runs from TestMain, before m.Run parses the flags.
		flag.Parse()
	}
	timeout, ok := f.Value.(flag.Getter).Get().(time.Duration)
	if !ok || timeout <= 0 {
		return run
	}
	timer := time.AfterFunc(time.Until(binaryStart.Add(timeout-min(deadlineMargin, timeout/4))), func() { _ = run() })
	return func() error {
		timer.Stop()
		return run()
	}
}
