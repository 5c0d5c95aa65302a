package blobcsi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/blobcsi"
	"github.com/profilekit/profilekit/plugins/plugintest"
)

// harnessBucket is the shared bucket the scenario's grants give every
// Profile it runs, read-only, mounted with the principal sp.
const harnessBucket = "plugintest-census"

// blobcsiScenario is the plugin on Azurite with the grants of OPA: a
// Profile gets the standard instance (a container of its own and a
// read-write volume) and the shared bucket its team reads (a read-only
// volume with the principal's attributes); it then chooses standard-ro and
// protected-b instead (two volumes are added, each instance's container
// record made, the standard volume removed, claim first), and lets go of
// the plugin (every volume removed; with retention Retain the container
// stays, with Delete it goes; the harness passes Retain to every pass, and
// hostApplier gives the host's retention instead).
//
// The grants sources run as a host runs them (the Definition's Runner);
// Setup puts the Profile's namespace into the team and waits until the
// source has told the Profile's grants, as a host's first pass after a
// grant would. The harness compares the claims; a PersistentVolume's claim
// reference takes the claim's UID when kube-controller-manager binds it,
// which differs in every run, so the volumes are compared through Observe
// (the fields the plugin sets, the claim named without its UID), with the
// Profile's containers and the proof in their metadata. Each pass waits
// for kube-controller-manager to bind and let go of volumes (hostApplier).
func blobcsiScenario(t *testing.T, retention plugins.Retention) plugintest.Scenario {
	defaults := hostConfig(t, map[string]any{"maxVolumeDeletes": 100000})
	def := blobcsi.Definition()
	grants := runGrants(t, def, defaults)
	compared := def
	compared.Plugin = hostApplier{Plugin: def.Plugin, def: def, retention: retention}
	compared.Owns = []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")}
	var touches []string
	for _, v := range []string{"standard", "standard-ro", "protected-b", harnessBucket} {
		touches = append(touches, "PersistentVolume /<profile>."+v)
	}
	var retained []string
	if retention != plugins.RetentionDelete {
		retained = []string{"container "}
	}
	return plugintest.Scenario{
		Def:      compared,
		Defaults: defaults,
		Steps: []plugintest.Step{
			{Name: "standard", Spec: map[string]any{"instances": []string{"standard"}}},
			{Name: "standard-ro and protected-b", Spec: map[string]any{"instances": []string{"standard-ro", "protected-b"}}},
			{Name: "remove", Remove: true},
		},
		Setup:   grants.join,
		Observe: observeBlob,
		Touches: touches,
		// Retain keeps the containers once the plugin is removed.
		Retained: retained,
		Equivalent: map[string]string{
			plugintest.CallTwice.Name: "every Azure call is idempotent: ensure creates the container only when it is missing and otherwise reads its proof, " +
				"so made again at once it finds its own container and writes nothing; remove deletes only a container that carries the Profile's proof " +
				"and is unmodified since it was read, so made again it finds it gone; the OPA call is a count that does nothing. The second call costs " +
				"reads and changes nothing Azurite, the record or the harness can tell (the lost plans, which make each call again, pass as well)",
		},
	}
}

// hostApplier is the plugin with the Applier a host gives it, for every
// kind the plugin owns, while the harness compares fewer. The Applier
// writes through the pass's client, so the harness records and perturbs
// its writes as any other. Each pass begins and ends once
// kube-controller-manager has done what the passes before began (see
// settle): the harness runs passes back to back, where a host comes back
// after a backoff.
type hostApplier struct {
	plugins.Plugin
	def       plugins.Definition
	retention plugins.Retention
}

func (p hostApplier) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	settle(ctx, req.Profile.Name)
	defer settle(ctx, req.Profile.Name)
	return p.Plugin.Apply(ctx, p.host(req))
}

// Revoke deletes the claims, and their volumes once
// kube-controller-manager has let the claims go; until then it fails,
// saying that it waits. It runs again within the pass when it says so,
// so that the first pass of the step holds every write of the removal:
// the harness perturbs the first pass's writes alone, and needs that pass
// to succeed before a stale one.
func (p hostApplier) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	var res plugins.Result
	var err error
	for range 3 {
		settle(ctx, req.Profile.Name)
		var more plugins.Result
		more, err = p.Plugin.Revoke(ctx, p.host(req))
		res.Merge(more)
		if err == nil || !strings.Contains(err.Error(), "to be deleted") {
			break
		}
	}
	settle(ctx, req.Profile.Name)
	return res, err
}

func (p hostApplier) host(req plugins.Request) plugins.Request {
	req.Objects = apply.New(req.Client, p.def.Kind(), req.Profile, p.def.Owns, append(apply.OptionsFor(p.def), apply.WithLiveReader(req.Live))...)
	req.Retention = p.retention
	return req
}

// settle waits, for at most 15 seconds, until the plugin's claims and
// volumes for profile that are being deleted are gone, and every claim
// whose volume exists is bound to it: what kube-controller-manager does
// after a pass, which the plugin's next pass waits for and the comparison
// of two runs needs done.
func settle(ctx context.Context, profile string) {
	sel := client.MatchingLabelsSelector{Selector: plugins.OwnedSelector(blobcsi.Kind, profile)}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var pvcs corev1.PersistentVolumeClaimList
		var pvs corev1.PersistentVolumeList
		if env.Client.List(ctx, &pvcs, sel, client.InNamespace(profile)) != nil || env.Client.List(ctx, &pvs, sel) != nil {
			return
		}
		live := map[string]bool{}
		busy := false
		for _, pv := range pvs.Items {
			live[pv.Name] = pv.DeletionTimestamp == nil
			busy = busy || pv.DeletionTimestamp != nil
		}
		for _, c := range pvcs.Items {
			busy = busy || c.DeletionTimestamp != nil || live[c.Spec.VolumeName] && c.Status.Phase != corev1.ClaimBound
		}
		if !busy {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// grantsRun is the grants document of a scenario, with the namespaces its
// team holds, and the namespaces the plugin's sources have told of.
type grantsRun struct {
	opa  *testenv.OPA
	mu   sync.Mutex
	team []string
	told map[string]bool
}

// runGrants runs def's grants sources for the host's defaults until the
// test ends, and publishes a document in which nobody reads the bucket yet.
func runGrants(t *testing.T, def plugins.Definition, defaults []byte) *grantsRun {
	t.Helper()
	cfg, err := def.DecodeHostDefaults(defaults)
	if err != nil {
		t.Fatal(err)
	}
	g := &grantsRun{opa: serversOf(t).opa, told: map[string]bool{}}
	if err := g.publish(t.Context()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- def.Runner(t.Context(), plugins.Runtime{Config: cfg, Enqueue: func(profiles ...string) {
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, p := range profiles {
				g.told[p] = true
			}
		}})
	}()
	t.Cleanup(func() {
		if err := <-done; err != nil {
			t.Errorf("grants sources: %v", err)
		}
	})
	return g
}

// publish puts the document: the team reads the bucket.
func (g *grantsRun) publish(ctx context.Context) error {
	g.mu.Lock()
	team := slices.Clone(g.team)
	g.mu.Unlock()
	return g.opa.PutData(ctx, "storage", grantsDoc{
		Classifications: []string{"unclassified"},
		Teams:           map[string][]string{"plugintest": team},
		Buckets:         map[string]map[string]any{harnessBucket: {"classification": "unclassified", "readers": []string{"plugintest"}, "spn": "sp"}},
	})
}

// join puts namespace into the team and waits until the source has told
// of it.
func (g *grantsRun) join(ctx context.Context, _ client.Client, namespace string) error {
	g.mu.Lock()
	g.team = append(g.team, namespace)
	g.mu.Unlock()
	if err := g.publish(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.mu.Lock()
		told := g.told[namespace]
		g.mu.Unlock()
		if told {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the grants source did not tell of %s within 10s", namespace)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// observeBlob returns the Profile's containers on Azurite with their
// metadata, and its PersistentVolumes as the plugin writes them.
func observeBlob(ctx context.Context, namespace string) (map[string]string, error) {
	out := map[string]string{}
	cred, err := service.NewSharedKeyCredential(azurite.Account, azurite.Key)
	if err != nil {
		return nil, err
	}
	svc, err := service.NewClientWithSharedKeyCredential(azurite.BlobURL+"/", cred, nil)
	if err != nil {
		return nil, err
	}
	pager := svc.NewListContainersPager(&service.ListContainersOptions{Prefix: &namespace, Include: service.ListContainersInclude{Metadata: true}})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, c := range page.ContainerItems {
			md := map[string]string{}
			for k, v := range c.Metadata {
				if v != nil {
					md[k] = *v
				}
			}
			b, _ := json.Marshal(md)
			out["container "+*c.Name] = string(b)
		}
	}
	var pvs corev1.PersistentVolumeList
	if err := env.Client.List(ctx, &pvs, client.MatchingLabelsSelector{Selector: plugins.OwnedSelector(blobcsi.Kind, namespace)}); err != nil {
		return nil, err
	}
	for _, pv := range pvs.Items {
		if pv.DeletionTimestamp != nil {
			continue
		}
		spec := pv.Spec.DeepCopy()
		if ref := spec.ClaimRef; ref != nil {
			spec.ClaimRef = &corev1.ObjectReference{Kind: ref.Kind, APIVersion: ref.APIVersion, Namespace: ref.Namespace, Name: ref.Name}
		}
		b, _ := json.Marshal(struct {
			Labels map[string]string
			Spec   *corev1.PersistentVolumeSpec
		}{pv.Labels, spec})
		out["PersistentVolume "+pv.Name] = string(b)
	}
	return out, nil
}

// TestBlobcsiSurvivesEveryPerturbation runs the scenario under every
// pattern, with retention Retain: the host stopping after each write, a
// stale cache at each write, and each Azure call refused or its answer
// lost.
func TestBlobcsiSurvivesEveryPerturbation(t *testing.T) {
	t.Parallel()
	surviveEveryPerturbation(t, plugins.RetentionRetain)
}

// TestBlobcsiRetentionDeleteSurvivesEveryPerturbation runs the scenario
// under every pattern with retention Delete, where letting go deletes the
// Profile's container once no volume of it is left.
func TestBlobcsiRetentionDeleteSurvivesEveryPerturbation(t *testing.T) {
	t.Parallel()
	surviveEveryPerturbation(t, plugins.RetentionDelete)
}

func surviveEveryPerturbation(t *testing.T, retention plugins.Retention) {
	// Each pattern's scenario has a grants source of its own.
	h := plugintest.Harness{Client: env.Client, Parallel: true}
	h.Survives(t, func(t *testing.T) plugintest.Scenario { return blobcsiScenario(t, retention) }, plugintest.EveryPattern...)
}
