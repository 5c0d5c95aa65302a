package testhost

import (
	"strings"
	"testing"
	"time"
)

// heldHere blocks until release closes: a runnable that does not stop.
func heldHere(release <-chan struct{}) { <-release }

// TestStuckGoroutinesNamesTheHolder: a goroutine of profilekit's code that
// does not end is among the stacks shown; the test's own goroutine is not.
func TestStuckGoroutinesNamesTheHolder(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	go heldHere(release)
	var got string
	for range 100 { // until the goroutine has run
		if got = stuckGoroutines(20); strings.Contains(got, "internal/testhost.heldHere") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(got, "internal/testhost.heldHere") {
		t.Errorf("the held goroutine is not shown:\n%s", got)
	}
	if strings.Contains(got, "TestStuckGoroutinesNamesTheHolder(") {
		t.Errorf("the test's own goroutine is shown:\n%s", got)
	}
}
