package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/reconcilers"
)

// floorManager is the managed-by label value and the field manager of the
// floors' copies, so that the host's cache never holds them.
const floorManager = "profilekit-bench-floor"

// floorWrite is how a floor sends one object: a POST or a server-side apply.
type floorWrite func(ctx context.Context, c client.Client, u *unstructured.Unstructured) error

// postWrite creates the object, as a plain client that knows the object is
// new would.
func postWrite(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
	return c.Create(ctx, u)
}

// applyWrite sends the object as a server-side apply with the floor's field
// manager, forcing ownership, as the host's plugins do.
func applyWrite(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(floorManager), client.ForceOwnership)
}

// floor times a plain client creating the same objects the host will write
// with POST.
func (b *bench) floor(ctx context.Context, d *desired) error {
	fmt.Fprintf(b.Out, "\n== floor: a plain client creates the same %d objects with POST\n", len(d.objects))
	p, err := b.timeFloor(ctx, d, "floor", postWrite, nil)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	b.res.Floor = p
	return nil
}

// applyFloor times a plain client sending the same objects the host will
// write as server-side applies, which separates the cost of server-side
// apply on the API server from the host's own.
func (b *bench) applyFloor(ctx context.Context, d *desired) error {
	fmt.Fprintf(b.Out, "\n== apply floor: a plain client sends the same %d objects as server-side applies\n", len(d.objects))
	p, err := b.timeFloor(ctx, d, "applyfloor", applyWrite, nil)
	if err != nil {
		return fmt.Errorf("apply floor: %w", err)
	}
	b.res.ApplyFloor = &p
	return nil
}

// profilesAlone times the benchmark creating the Profiles as the
// convergence does, with no host running: what the input costs the
// machine, apart from the host's work on it.
func (b *bench) profilesAlone(ctx context.Context, profiles []*kubeflowv1.Profile) error {
	fmt.Fprintf(b.Out, "\n== the %d Profiles alone, no host running\n", len(profiles))
	cpu, err := sampleCPU()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := b.createProfiles(ctx, profiles); err != nil {
		return fmt.Errorf("the Profiles alone: %w", err)
	}
	el := time.Since(start)
	p := newPhase(el, len(profiles), cpuSince(cpu))
	fmt.Fprintf(b.Out, "created %d Profiles in %s\n  %s\n", len(profiles), el.Round(time.Millisecond), p.CPU)
	b.res.ProfilesAlone = &p
	return nil
}

// timeFloor times a plain client writing copies of the desired objects
// into fresh namespaces named with prefix, with the host's rate limits and
// as many workers as the host has reconcile workers. The copies keep their
// content, owner reference (to a made-up uid) and labels, except that
// managed-by names the benchmark. The clock stops when every object is
// written and, with settle, when settle returns for the n written.
func (b *bench) timeFloor(ctx context.Context, d *desired, prefix string, write floorWrite, settle func(ctx context.Context, n int) error) (Phase, error) {
	namespaces, objs, nss := floorCopies(d, prefix)
	if len(namespaces) == 0 {
		if err := b.createNamespaces(ctx, nss); err != nil {
			return Phase{}, err
		}
	}
	rc := reconcilers.RateLimited(b.admin, b.QPS, b.Burst)
	c, err := client.New(rc, client.Options{Scheme: b.scheme})
	if err != nil {
		return Phase{}, fmt.Errorf("client: %w", err)
	}
	// Discovery of each kind happens once per client; do it before the
	// clock, as the host did while it started.
	for _, gvk := range d.kinds() {
		if _, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return Phase{}, err
		}
	}
	cpu, err := sampleCPU()
	if err != nil {
		return Phase{}, err
	}
	send := func(batch []*unstructured.Unstructured) error {
		return parallel(ctx, len(batch), b.res.Workers, func(ctx context.Context, i int) error {
			if err := write(ctx, c, batch[i]); err != nil {
				return fmt.Errorf("write %s %s/%s: %w", batch[i].GetKind(), batch[i].GetNamespace(), batch[i].GetName(), err)
			}
			return nil
		})
	}
	profiled := b.apiServerProfile(ctx, prefix)
	start := time.Now()
	// The core plugin's namespaces are among the objects: the plain client
	// writes them too, first, on the clock.
	if err := send(namespaces); err != nil {
		return Phase{}, err
	}
	if err := send(objs); err != nil {
		return Phase{}, err
	}
	n := len(namespaces) + len(objs)
	if settle != nil {
		if err := settle(ctx, n); err != nil {
			return Phase{}, err
		}
	}
	el := time.Since(start)
	p := newPhase(el, n, cpuSince(cpu))
	fmt.Fprintf(b.Out, "wrote %d objects in %s (%.0f objects/s, %d workers, %.1f KiB allocated per object)\n  %s\n", n, el.Round(time.Millisecond), p.ObjectsPerSecond, b.res.Workers, p.AllocatedKiBPerObject, p.CPU)
	return p, profiled()
}

// floorCopies returns copies of the desired objects for a floor: the
// namespaces among them (when the core plugin makes them), the other
// objects, and the names of the floor's namespaces.
func floorCopies(d *desired, prefix string) (namespaces, objs []*unstructured.Unstructured, nss []string) {
	floorName := func(profile string) string { return prefix + strings.TrimPrefix(profile, "bench") }
	uids := map[string]types.UID{}
	for _, o := range d.objects {
		ns := floorName(o.Profile)
		if _, ok := uids[ns]; !ok {
			uids[ns] = types.UID(uuid.NewString())
			nss = append(nss, ns)
		}
		u := o.Object.DeepCopy()
		isNamespace := u.GetKind() == "Namespace" && u.GetNamespace() == ""
		if isNamespace {
			u.SetName(ns)
		} else {
			u.SetNamespace(ns)
		}
		l := u.GetLabels()
		l[plugins.LabelManagedBy] = floorManager
		l[plugins.LabelProfile] = ns
		u.SetLabels(l)
		refs := u.GetOwnerReferences()
		for i := range refs {
			refs[i].Name, refs[i].UID = ns, uids[ns]
		}
		u.SetOwnerReferences(refs)
		if isNamespace {
			namespaces = append(namespaces, u)
			continue
		}
		objs = append(objs, u)
	}
	return namespaces, objs, nss
}
