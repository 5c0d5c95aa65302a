package testhost

import (
	"runtime"
	"strings"
)

// stuckGoroutines returns the stacks of the goroutines that run profilekit's
// code outside a test's own goroutine, at most limit of them: for a manager
// that did not stop within its grace period, one of them is what held it.
func stuckGoroutines(limit int) string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if len(out) == limit {
			break
		}
		if strings.Contains(g, "github.com/profilekit/profilekit/") && !strings.Contains(g, "testing.tRunner") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}
