package blobcsi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/opa"
	"github.com/profilekit/profilekit/plugins"
)

// run starts the grants sources of the host's config and enqueues the
// Profiles whose grants change, and every Profile once a source takes its
// first snapshot (until then each reports GrantsNotSynced, with why; see
// tellUntilSynced).
func (p Plugin) run(ctx context.Context, rt plugins.Runtime) error {
	cfg, ok := rt.Config.(*Config)
	if !ok {
		return fmt.Errorf("config is %T", rt.Config)
	}
	sources, err := newSources(cfg, rt)
	if err != nil {
		return err
	}
	p.st.mu.Lock()
	p.st.sources = sources
	p.st.mu.Unlock()
	var wg sync.WaitGroup
	for _, src := range sources {
		wg.Go(func() {
			_ = src.Run(ctx, func(ns []string) { rt.Enqueue(ns...) })
		})
		if rt.EnqueueAll != nil {
			wg.Go(func() { tellUntilSynced(ctx, src, rt.EnqueueAll, time.Second) })
		}
	}
	wg.Wait()
	return nil
}

// tellUntilSynced enqueues every Profile once the source takes its first
// snapshot and, until then, each time the reason it has none changes (its
// first refresh failed, or now fails otherwise), checked every period. A
// source that hangs or fails from the start is thus named on every
// Profile's condition within its timeout, instead of "it has not answered
// yet" for as long as it is down.
func tellUntilSynced(ctx context.Context, src opa.Source, all func(), period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	last := ""
	for {
		select {
		case <-src.Synced():
			all()
			return
		case <-ctx.Done():
			return
		case <-t.C:
			if err := src.State().Err; err != nil && err.Error() != last {
				last = err.Error()
				all()
			}
		}
	}
}

// newSources makes the config's grants sources. Each compares its first
// document after a start with the grants the plugin's claims in the cluster
// stand for, so that a restart does not reset the drop guard.
func newSources(cfg *Config, rt plugins.Runtime) (map[string]opa.Source, error) {
	sources := map[string]opa.Source{}
	var cs kubernetes.Interface
	for _, gs := range cfg.GrantSources {
		o := opa.Options{MaxDropShare: gs.MaxDropShare}
		if rt.Reader != nil {
			o.Baseline = inUse(rt.Reader, cfg, gs.Name)
		}
		switch {
		case gs.OPA != nil:
			c, err := opa.NewClient(gs.OPA.URL)
			if err != nil {
				return nil, err
			}
			o.Interval = gs.OPA.Interval.Duration
			src, err := opa.NewPoller(gs.Name, c, gs.OPA.Path, nil, o)
			if err != nil {
				return nil, err
			}
			sources[gs.Name] = src
		case gs.ConfigMap != nil:
			if cs == nil {
				var err error
				if cs, err = kubernetes.NewForConfig(rt.RESTConfig); err != nil {
					return nil, err
				}
			}
			src, err := opa.NewConfigMapSource(gs.Name, cs, gs.ConfigMap.Namespace, gs.ConfigMap.Name, o)
			if err != nil {
				return nil, err
			}
			sources[gs.Name] = src
		}
	}
	return sources, nil
}

// inUse returns the grants that the plugin's volumes from source stand for,
// across the cluster: one per PersistentVolume of the plugin whose claim
// exists and is not being deleted. A claim alone does not count: a tenant
// can make claims with our labels in its own namespace, and would so hold
// back every tenant's grants after a restart; PersistentVolumes it cannot
// make. Nor does a volume whose claim was deleted and made again under its
// name: the volume's claim reference, once bound, names the claim's UID.
// Both are read from the API server, the claims as metadata only.
func inUse(r client.Reader, cfg *Config, source string) func(context.Context) ([]opa.Grant, error) {
	return func(ctx context.Context) ([]opa.Grant, error) {
		ours := client.MatchingLabels{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: Kind, LabelSource: source}
		var claims metav1.PartialObjectMetadataList
		claims.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaimList"))
		if err := r.List(ctx, &claims, ours); err != nil {
			return nil, fmt.Errorf("list the claims of grants source %s: %w", source, err)
		}
		live := make(map[types.NamespacedName]types.UID, len(claims.Items))
		for _, c := range claims.Items {
			if c.DeletionTimestamp == nil {
				live[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}] = c.UID
			}
		}
		var pvs corev1.PersistentVolumeList
		if err := r.List(ctx, &pvs, ours); err != nil {
			return nil, fmt.Errorf("list the volumes of grants source %s: %w", source, err)
		}
		out := make([]opa.Grant, 0, len(pvs.Items))
		for _, pv := range pvs.Items {
			ref := pv.Spec.ClaimRef
			if ref == nil {
				continue
			}
			// A volume made for a claim names it before binding, without its UID.
			if uid, ok := live[types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}]; ok && (ref.UID == "" || ref.UID == uid) {
				out = append(out, opa.Grant{Namespace: ref.Namespace, Volume: volumeOf(cfg.Names.Claim, ref.Namespace, ref.Name)})
			}
		}
		return out, nil
	}
}

// volumeOf returns the volume name a claim was named after by the claim
// template: what the template puts around {{ .Volume }} taken off. A name
// the template does not explain counts as its own volume, which the drop
// guard then counts as withdrawn: it errs on the side of taking nothing.
func volumeOf(tmpl, ns, claim string) string {
	const mark = "\x00"
	rendered, err := render(tmpl, ns, mark)
	if err != nil {
		return claim
	}
	prefix, suffix, ok := strings.Cut(rendered, mark)
	if !ok || strings.Contains(suffix, mark) || len(claim) <= len(prefix)+len(suffix) ||
		!strings.HasPrefix(claim, prefix) || !strings.HasSuffix(claim, suffix) {
		return claim
	}
	return claim[len(prefix) : len(claim)-len(suffix)]
}

// grants returns the snapshots of the config's sources, the sources whose
// volumes must not be removed now (not synced, or not running), and the
// errors to report.
func (p Plugin) grants(ctx context.Context, req plugins.Request, cfg *Config) (map[string]opa.Grants, map[string]bool, error) {
	p.st.mu.Lock()
	sources := p.st.sources
	p.st.mu.Unlock()
	out := map[string]opa.Grants{}
	unknown := map[string]bool{}
	var errs []error
	for _, gs := range cfg.GrantSources {
		src, ok := sources[gs.Name]
		if !ok {
			unknown[gs.Name] = true
			if req.Outside != nil && req.Outside.Offline() {
				// Offline rendering: a ConfigMap given with the Profiles
				// stands for the source's document; otherwise shared
				// buckets are not known, and render says which call was
				// not made.
				if gs.OPA != nil {
					// Offline, Call only notes the call skipped, as
					// "<system> <key>": the key names the source.
					_ = req.Outside.Call(ctx, SystemOPA+" grants/"+gs.Name, func(context.Context) error { return nil })
				}
				if gs.ConfigMap != nil {
					g, found, err := offlineGrants(ctx, req.Client, gs.ConfigMap)
					if err != nil {
						errs = append(errs, plugins.Terminal(plugins.ReasonInvalidConfig, fmt.Errorf("grants source %s: %w", gs.Name, err)))
					} else if found {
						out[gs.Name] = g
						delete(unknown, gs.Name)
					}
				}
				continue
			}
			errs = append(errs, fmt.Errorf("grants source %s is not running", gs.Name))
			continue
		}
		st := src.State()
		if !st.Synced {
			unknown[gs.Name] = true
			// Terminal: the source's first snapshot enqueues every Profile.
			why := "it has not answered yet"
			if st.Err != nil {
				why = st.Err.Error()
			}
			errs = append(errs, plugins.Terminalf(ReasonGrantsNotSynced,
				"grants source %s has no snapshot yet (%s); none of its volumes is added or removed until it has", gs.Name, why))
			continue
		}
		out[gs.Name] = st.Grants
		// Only the Profiles the kept grants name are affected (and hear when
		// the source recovers); the others have nothing of it to keep.
		if st.Err != nil && len(st.Grants.For(plugins.Namespace(req.Profile))) > 0 {
			errs = append(errs, plugins.Terminal(ReasonGrantsStale, fmt.Errorf("%w; keeping the grants taken at %s, nothing is removed",
				st.Err, st.Taken.UTC().Format(time.RFC3339))))
		}
	}
	return out, unknown, errors.Join(errs...)
}

// offlineGrants reads a ConfigMap source's document from c, when c holds
// the ConfigMap (render's input).
func offlineGrants(ctx context.Context, c client.Reader, src *ConfigMapSource) (opa.Grants, bool, error) {
	if c == nil {
		return opa.Grants{}, false, nil
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: src.Namespace, Name: src.Name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return opa.Grants{}, false, nil
		}
		return opa.Grants{}, false, err
	}
	g, err := opa.DecodeConfigMap(cm.Data)
	return g, err == nil, err
}
