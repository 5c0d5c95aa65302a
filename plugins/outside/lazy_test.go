package outside_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/profilekit/profilekit/plugins/outside"
)

func TestLazyBuildsOnceAndRetriesAFailedBuild(t *testing.T) {
	builds := 0
	fail := true
	l := outside.NewLazy(func(context.Context) (int, error) {
		builds++
		if fail {
			return 0, errors.New("no credentials yet")
		}
		return builds, nil
	})
	if builds != 0 {
		t.Fatalf("NewLazy built the value %d times, want none before the first Get", builds)
	}
	if v, err := l.Get(t.Context()); err == nil || v != 0 {
		t.Fatalf("Get with a failing build = %d, %v; want 0 and the build's error", v, err)
	}
	fail = false
	v, err := l.Get(t.Context())
	if err != nil || v != 2 {
		t.Fatalf("Get after a failed build = %d, %v; want 2 (built again), nil", v, err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if v, err := l.Get(t.Context()); err != nil || v != 2 {
				t.Errorf("concurrent Get = %d, %v; want the value built before, 2", v, err)
			}
		})
	}
	wg.Wait()
	if builds != 2 {
		t.Errorf("built %d times, want 2: once failed, once for good", builds)
	}
}
