package core

import (
	"testing"
	"time"
)

// SetPollEvery sets how often the labels file is read besides being
// watched, until the test ends. The test must not run in parallel.
func SetPollEvery(t testing.TB, d time.Duration) {
	old := pollEvery
	pollEvery = d
	t.Cleanup(func() { pollEvery = old })
}
