package volumes_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/volumes"
)

// outage is the volumes plugin with passes that meet an API server out of
// reach for some kinds: while classes is set, every read of StorageClasses
// fails; while volumes is set, every apply to a PersistentVolume fails.
type outage struct {
	plugins.Plugin
	classes, volumes *atomic.Bool
}

func (o outage) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	req.Watched = classesDown{Reader: req.WatchedReader(), down: o.classes}
	req.Client = outageCluster{Cluster: req.Client, classes: classesDown{Reader: req.Client, down: o.classes}, volumes: o.volumes}
	return o.Plugin.Apply(ctx, req)
}

var errInjected = errors.New("the API server did not answer (injected)")

type classesDown struct {
	client.Reader
	down *atomic.Bool
}

func (c classesDown) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*storagev1.StorageClass); ok && c.down.Load() {
		return errInjected
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c classesDown) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*storagev1.StorageClassList); ok && c.down.Load() {
		return errInjected
	}
	return c.Reader.List(ctx, list, opts...)
}

type outageCluster struct {
	plugins.Cluster
	classes classesDown
	volumes *atomic.Bool
}

func (o outageCluster) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return o.classes.Get(ctx, key, obj, opts...)
}

func (o outageCluster) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return o.classes.List(ctx, list, opts...)
}

func (o outageCluster) Apply(ctx context.Context, ac runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if o.volumes.Load() {
		raw, err := json.Marshal(ac)
		if err != nil {
			return err
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(raw, &tm); err != nil {
			return err
		}
		if tm.Kind == "PersistentVolume" {
			return errInjected
		}
	}
	return o.Cluster.Apply(ctx, ac, opts...)
}

// startOutage serves the Profiles of run with the volumes plugin, its
// passes meeting the outages that classes and volumes turn on.
func startOutage(t *testing.T, run string, cfg map[string]any) (classes, pvs *atomic.Bool) {
	t.Helper()
	classes, pvs = &atomic.Bool{}, &atomic.Bool{}
	def := volumes.Definition()
	def.Plugin = outage{Plugin: def.Plugin, classes: classes, volumes: pvs}
	startHostOf(t, def, run, cfg)
	return classes, pvs
}

// TestOutageIsReportedAndLosesNothing: a read of StorageClasses or a write
// of a volume's marks that fails is a failed pass, said on the condition,
// never a pass that looks done; the claim stays, and once the API server
// answers again the pass completes.
func TestOutageIsReportedAndLosesNothing(t *testing.T) {
	t.Run("a StorageClass read", func(t *testing.T) {
		run, name := "down-"+rand.String(4), "down-"+rand.String(5)
		classes, _ := startOutage(t, run, hostConfig(storageClass(t, false)))
		newProfile(t, name, run, "alice@example.org", nil)
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
		classesDownKeepsTheClaim(t, classes, name, "workspace", "read StorageClass")
		classes.Store(false)
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	})
	t.Run("the list of StorageClasses, for a template without a class", func(t *testing.T) {
		run, name := "down-"+rand.String(4), "down-"+rand.String(5)
		classes, _ := startOutage(t, run, map[string]any{
			"templates": []map[string]any{{"name": "plain", "claimName": "scratch", "size": "1Gi"}},
			"volumes":   []map[string]any{{"template": "plain"}},
		})
		newProfile(t, name, run, "alice@example.org", nil)
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
		classesDownKeepsTheClaim(t, classes, name, "scratch", "list StorageClasses")
	})
	t.Run("the write of a bound volume's marks", func(t *testing.T) {
		run, name := "down-"+rand.String(4), "down-"+rand.String(5)
		_, volumesDown := startOutage(t, run, hostConfig(storageClass(t, false)))
		volumesDown.Store(true)
		newProfile(t, name, run, "alice@example.org", nil)
		pv := provision(t, name, "workspace")
		waitBound(t, name, "workspace")
		cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "apply fields of PersistentVolume")
		t.Logf("%s=%s: %s", condType, cond.Status, cond.Message)
		got := waitVolume(t, pv.Name, time.Second, func(*corev1.PersistentVolume) (bool, string) { return true, "" })
		if got.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || got.Labels[volumes.LabelOwner] != "" {
			t.Fatalf("the refused write changed the volume: reclaim %s, labels %v", got.Spec.PersistentVolumeReclaimPolicy, got.Labels)
		}

		volumesDown.Store(false)
		testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
		waitVolume(t, pv.Name, 20*time.Second, func(pv *corev1.PersistentVolume) (bool, string) {
			return pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRetain && pv.Labels[volumes.LabelOwner] == volumes.OwnerHash("alice@example.org"),
				fmt.Sprintf("reclaim %s, labels %v", pv.Spec.PersistentVolumeReclaimPolicy, pv.Labels)
		})
	})
}

// TestTemplateWithoutClassReadsTheDefault: a template that names no
// StorageClass gets the cluster's default, as its claim does from the API
// server; what the plugin says of the claim is about that class, not about
// another one of the cluster's.
func TestTemplateWithoutClassReadsTheDefault(t *testing.T) {
	storageClass(t, true) // another class, which allows expansion
	def := storageClassWith(t, false, map[string]string{"storageclass.kubernetes.io/is-default-class": "true"})

	run, name := "default-"+rand.String(4), "default-"+rand.String(5)
	startHost(t, run, map[string]any{
		"templates": []map[string]any{{"name": "plain", "claimName": "scratch", "size": "1Gi", "maxSize": "5Gi"}},
		"volumes":   []map[string]any{{"template": "plain"}},
	})
	newProfile(t, name, run, "alice@example.org", nil)
	testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionTrue, "")
	setVolumes(t, name, map[string]any{"volumes": []map[string]any{{"template": "plain", "size": "3Gi"}}})
	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, "does not allow volume expansion")
	if want := fmt.Sprintf("StorageClass %q", def); !strings.Contains(cond.Message, want) {
		t.Errorf("%s message %q does not name the default class: want %s", condType, cond.Message, want)
	}
	if got := claimSize(t, name, "scratch"); got != "1Gi" {
		t.Errorf("claim scratch requests %s, want 1Gi", got)
	}
}

// classesDownKeepsTheClaim turns the outage of StorageClasses on and
// checks that the Profile's condition turns False with msg while its claim
// stays the one it was.
func classesDownKeepsTheClaim(t *testing.T, classes *atomic.Bool, name, claim, msg string) {
	t.Helper()
	before := claimUID(t, name, claim)
	classes.Store(true)
	cond := testhost.WaitCondition(t, env.Client, name, condType, plugins.ConditionFalse, msg)
	t.Logf("%s=%s: %s", condType, cond.Status, cond.Message)
	if after := claimUID(t, name, claim); after != before {
		t.Errorf("the claim was made again during the outage: uid %s, was %s", after, before)
	}
}

// claimUID returns the uid of claim ns/name.
func claimUID(t *testing.T, ns, name string) string {
	t.Helper()
	var c corev1.PersistentVolumeClaim
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
		t.Fatal(err)
	}
	return string(c.UID)
}
