package reconcilers

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// ReasonTenureKept is the reason of the Event that says a Revoke left what
// is kept under a Profile's name to the owner who holds the name.
const ReasonTenureKept = "TenureKept"

// tenures returns the tenure records of a plugin with outside state, read
// through c and live (nil: c alone) in the records' namespace of opts; nil
// for a plugin without outside state, which keeps nothing under a name.
func tenures(def plugins.Definition, c plugins.Cluster, live client.Reader, opts outside.Options) *outside.Tenures {
	if !def.OutsideState {
		return nil
	}
	return &outside.Tenures{Reader: c, Live: live, Writer: c, Namespace: opts.Namespace}
}

// holdTenure holds p's name for its owner before an Apply: a Profile whose
// name another owner holds gets a terminal Conflict, and its plugin is
// never called, so nothing is granted, mounted or trusted under the name.
func holdTenure(ctx context.Context, t *outside.Tenures, p *kubeflowv1.Profile) error {
	if t == nil {
		return nil
	}
	return t.Hold(ctx, p)
}

// revokesUnderTenure reports whether a Revoke of p may run: unless another
// owner holds p's name and p never held it, in which case nothing under the
// name was made for p, and what is there (data kept with retention Retain,
// grants the holder's Profile made) is the holder's, not p's to remove. An
// error other than the tenure's is returned, to retry.
func revokesUnderTenure(ctx context.Context, t *outside.Tenures, p *kubeflowv1.Profile) (bool, error) {
	if t == nil {
		return true, nil
	}
	err := t.Hold(ctx, p)
	var te *outside.TenureError
	switch {
	case errors.As(err, &te):
		return te.Held, nil
	case err != nil:
		return false, err
	}
	return true, nil
}
