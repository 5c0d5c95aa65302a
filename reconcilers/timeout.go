package reconcilers

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// DefaultRequestTimeout bounds each request a reconcile sends to the API
// server. A large apply over a busy API server takes a second or two; one that
// takes longer is stuck, not slow.
const DefaultRequestTimeout = 15 * time.Second

// WithTimeout returns c with every request bounded by d, through
// controller-runtime's interceptor. A read from the cache takes no time
// unless the cache is still filling, which the bound then also covers.
func WithTimeout(c client.Client, d time.Duration) client.Client {
	if tc, ok := c.(timeoutClient); ok {
		c = tc.inner
	}
	bound := func(ctx context.Context) (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, d) }
	return timeoutClient{inner: c, WithWatch: interceptor.NewClient(unwatched{c}, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.Create(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.DeleteAllOf(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.Apply(ctx, obj, opts...)
		},
		SubResourceGet: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceGetOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.SubResource(sub).Get(ctx, obj, subObj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})}
}

// timeoutClient is the interceptor with the client it bounds, so that
// bounding it again replaces the bound instead of stacking another.
type timeoutClient struct {
	client.WithWatch
	inner client.Client
}

// unwatched lends a client.Client the Watch that interceptor.NewClient's
// argument needs; a reconcile never watches through its client.
type unwatched struct{ client.Client }

func (unwatched) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not served by a reconcile's client")
}

// readerWithTimeout bounds the requests of an uncached reader.
type readerWithTimeout struct {
	client.Reader
	d time.Duration
}

func (r readerWithTimeout) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	ctx, cancel := context.WithTimeout(ctx, r.d)
	defer cancel()
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r readerWithTimeout) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	ctx, cancel := context.WithTimeout(ctx, r.d)
	defer cancel()
	return r.Reader.List(ctx, list, opts...)
}
