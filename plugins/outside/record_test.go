package outside_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/profilekit/profilekit/plugins/outside"
)

// cacheView is a cache that has not caught up with the server: a Get of a
// ConfigMap named in shows answers the copy there, or NotFound for nil (the
// cache has not seen it yet), as an informer does before it shows the
// latest writes; everything else goes to the server.
type cacheView struct {
	client.Client
	shows map[string]*corev1.ConfigMap
}

func (c cacheView) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		if held, seen := c.shows[key.Name]; seen {
			if held == nil {
				return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
			}
			held.DeepCopyInto(cm)
			return nil
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// countingReader counts reads.
type countingReader struct {
	client.Reader
	n int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.n++
	return c.Reader.Get(ctx, key, obj, opts...)
}

// A cache that has not seen the host's own last write of the record is
// checked against the API server before any call: the piece it made is
// not made again.
func TestOutsideAsksTheServerBeforeCallingOnACacheBehind(t *testing.T) {
	server := outsideClient(t)
	p := newProfile(nil)
	made := calls{}
	pass(t, outside.New(server, "iam", p, outside.Options{}), made, map[string]any{"role/a": 1})

	unseen := cacheView{Client: server, shows: map[string]*corev1.ConfigMap{recordOf("iam").Name: nil}}
	live := &countingReader{Reader: server}
	pass(t, outside.New(unseen, "iam", p, outside.Options{}, outside.WithLiveReader(live)), made, map[string]any{"role/a": 1})
	if made["role/a"] != 1 || live.n != 1 {
		t.Errorf("a pass over a cache without the record: %d calls, %d reads from the API server; want 1 (the first pass's) and 1", made["role/a"], live.n)
	}
}

// Records waits for the cache to show this host's last write; when a
// read from the API server finds a later write by someone else (another
// host's pass), it waits for that one instead, so that the host trusts its
// cache again once it shows it, rather than reading from the API server on
// every pass.
func TestOutsideRecordsFollowAnotherWriter(t *testing.T) {
	server := outsideClient(t)
	p := newProfile(nil)
	records := outside.NewRecords()
	made := calls{}
	ours := func(live client.Reader) *outside.Outside {
		return outside.New(server, "iam", p, outside.Options{}, outside.WithLiveReader(live), outside.WithRecords(records))
	}
	pass(t, ours(server), made, map[string]any{"role/a": 1})
	// Another host writes the record after us.
	pass(t, outside.New(server, "iam", p, outside.Options{}), made, map[string]any{"role/a": 1, "role/b": 2})

	for i, want := range []int{1, 0} {
		live := &countingReader{Reader: server}
		pass(t, ours(live), made, map[string]any{"role/a": 1, "role/b": 2})
		if live.n != want {
			t.Errorf("pass %d over a cache that shows the other host's write: %d reads from the API server, want %d", i+1, live.n, want)
		}
	}
	if diff := cmp.Diff(calls{"role/a": 1, "role/b": 1}, made); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// Claims that Flush cannot let go make Flush fail: the pass is tried
// again, rather than leaving a claim that keeps the piece from others.
func TestOutsideFlushReportsClaimsItCouldNotRelease(t *testing.T) {
	ctx := t.Context()
	server := outsideClient(t)
	p := newProfile(nil)
	pass(t, outside.New(server, "iam", p, outside.Options{}), calls{}, map[string]any{"role/a": 1, "role/b": 2})

	outage := errors.New("etcd unavailable")
	failing := interceptor.NewClient(server.(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.ConfigMapList); ok {
				return outage
			}
			return c.List(ctx, list, opts...)
		},
	})
	o := outside.New(failing, "iam", p, outside.Options{})
	if err := o.Forget(ctx, "role/a"); err != nil {
		t.Fatal(err)
	}
	if err := o.Flush(ctx); !errors.Is(err, outage) {
		t.Errorf("Flush after a Forget, claims not listable: %v, want the list's error", err)
	}
}

// The record is deleted only as it was read: one that another pass
// deleted and made again in between (a new UID) holds what that pass
// made, and is kept.
func TestOutsideFlushDeletesOnlyTheRecordItRead(t *testing.T) {
	ctx := t.Context()
	opts := outside.Options{Namespace: recordsNamespace(t)}
	p := newProfile(nil)
	pass(t, outside.New(env.Client, "iam", p, opts), calls{}, map[string]any{"role/a": 1})
	o := outside.New(env.Client, "iam", p, opts)
	if keys, err := o.Recorded(ctx); err != nil || len(keys) != 1 {
		t.Fatalf("Recorded = %v, %v", keys, err)
	}

	// Meanwhile another pass removes role/a, and the next makes role/b.
	other := outside.New(env.Client, "iam", p, opts)
	if err := other.Forget(ctx, "role/a"); err != nil {
		t.Fatal(err)
	}
	if err := other.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	pass(t, outside.New(env.Client, "iam", p, opts), calls{}, map[string]any{"role/b": 2})

	if err := o.Forget(ctx, "role/a"); err != nil {
		t.Fatal(err)
	}
	if err := o.Flush(ctx); !apierrors.IsConflict(err) {
		t.Errorf("Flush of a record made again since it was read: %v, want a Conflict", err)
	}
	if keys, err := outside.New(env.Client, "iam", p, opts).Recorded(ctx); err != nil || !cmp.Equal(keys, []string{"role/b"}) {
		t.Errorf("Recorded = %v, %v; want [role/b], the record made again", keys, err)
	}
}
