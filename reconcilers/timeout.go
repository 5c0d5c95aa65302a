package reconcilers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultRequestTimeout bounds each request a reconcile sends to the API
// server. A large apply over a busy API server takes a second or two; one that
// takes longer is stuck, not slow.
const DefaultRequestTimeout = 15 * time.Second

// WithTimeout returns c with every request bounded by d. A read from the
// cache takes no time unless the cache is still filling, which the bound
// then also covers.
func WithTimeout(c client.Client, d time.Duration) client.Client {
	if tc, ok := c.(timeoutClient); ok {
		c = tc.Client
	}
	return timeoutClient{Client: c, d: d}
}

type timeoutClient struct {
	client.Client
	d time.Duration
}

func (c timeoutClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	ctx, cancel := context.WithTimeout(ctx, c.d)
	defer cancel()
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c timeoutClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	ctx, cancel := context.WithTimeout(ctx, c.d)
	defer cancel()
	return c.Client.List(ctx, list, opts...)
}

func (c timeoutClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	ctx, cancel := context.WithTimeout(ctx, c.d)
	defer cancel()
	return c.Client.Create(ctx, obj, opts...)
}

func (c timeoutClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	ctx, cancel := context.WithTimeout(ctx, c.d)
	defer cancel()
	return c.Client.Delete(ctx, obj, opts...)
}

func (c timeoutClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	ctx, cancel := context.WithTimeout(ctx, c.d)
	defer cancel()
	return c.Client.DeleteAllOf(ctx, obj, opts...)
}

func (c timeoutClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	ctx, cancel := context.WithTimeout(ctx, c.d)
	defer cancel()
	return c.Client.Update(ctx, obj, opts...)
}

func (c timeoutClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	ctx, cancel := context.WithTimeout(ctx, c.d)
	defer cancel()
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c timeoutClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	ctx, cancel := context.WithTimeout(ctx, c.d)
	defer cancel()
	return c.Client.Apply(ctx, obj, opts...)
}

func (c timeoutClient) Status() client.SubResourceWriter {
	return timeoutSubResource{c.Client.Status(), c.d}
}

func (c timeoutClient) SubResource(name string) client.SubResourceClient {
	return timeoutSubResource{c.Client.SubResource(name), c.d}
}

// timeoutSubResource bounds the requests of a subresource client. Status
// writers have no Get; the wrapped Get is reached only through SubResource.
type timeoutSubResource struct {
	w client.SubResourceWriter
	d time.Duration
}

func (s timeoutSubResource) Get(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceGetOption) error {
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return s.w.(client.SubResourceClient).Get(ctx, obj, sub, opts...)
}

func (s timeoutSubResource) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return s.w.Create(ctx, obj, sub, opts...)
}

func (s timeoutSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return s.w.Update(ctx, obj, opts...)
}

func (s timeoutSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return s.w.Patch(ctx, obj, patch, opts...)
}

func (s timeoutSubResource) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return s.w.Apply(ctx, obj, opts...)
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
