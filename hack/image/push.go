package main

import (
	"context"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// push sends the index in the layout dir, with its images and layers, to
// the reference ref.
func push(ctx context.Context, stdout io.Writer, dir, ref string, opts ...remote.Option) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	idx, err := readLayout(dir)
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(r, idx, append(opts, remote.WithContext(ctx))...); err != nil {
		return fmt.Errorf("push %s: %w", r, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pushed %s@%s\n", r.Context(), digest)
	return nil
}
