package volumes

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

func TestClaimSize(t *testing.T) {
	home := Template{Name: "home", ClaimName: "home", StorageClassName: "standard", Size: resource.MustParse("10Gi"), MaxSize: resource.MustParse("50Gi")}
	grows := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, AllowVolumeExpansion: ptr.To(true)}
	fixed := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}}
	tests := []struct {
		reason string
		v      Volume
		live   *resource.Quantity
		sc     *storagev1.StorageClass
		want   string
		msg    string
	}{
		{reason: "a new claim gets the template's size", v: Volume{Template: "home"}, want: "10Gi"},
		{reason: "a new claim gets the size the Profile asks", v: Volume{Template: "home", Size: q("20Gi")}, sc: fixed, want: "20Gi"},
		{reason: "a live claim grows on a class that allows it", v: Volume{Template: "home", Size: q("20Gi")}, live: q("10Gi"), sc: grows, want: "20Gi"},
		{reason: "a live claim stays on a class that does not", v: Volume{Template: "home", Size: q("20Gi")}, live: q("10Gi"), sc: fixed, want: "10Gi", msg: "does not allow volume expansion"},
		{reason: "a live claim stays when the class is missing", v: Volume{Template: "home", Size: q("20Gi")}, live: q("10Gi"), want: "10Gi", msg: `StorageClass "standard"`},
		{reason: "a claim never shrinks", v: Volume{Template: "home"}, live: q("20Gi"), sc: grows, want: "20Gi"},
		{reason: "a live claim of the size asked stays, without a word, on a class that does not grow", v: Volume{Template: "home", Size: q("10Gi")}, live: q("10Gi"), sc: fixed, want: "10Gi"},
	}
	for _, tt := range tests {
		got, msg := ClaimSize(home, tt.v, tt.live, tt.sc)
		if diff := cmp.Diff(tt.want, got.String()); diff != "" {
			t.Errorf("%s: size (-want +got):\n%s", tt.reason, diff)
		}
		if (tt.msg == "") != (msg == "") || !strings.Contains(msg, tt.msg) {
			t.Errorf("%s: message %q, want one containing %q", tt.reason, msg, tt.msg)
		}
	}
}

func TestClaim(t *testing.T) {
	home := Template{Name: "home", ClaimName: "home", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Labels: map[string]string{"automount": "true"}}
	size := resource.MustParse("10Gi")
	claim := func(volumeName string, annotations map[string]string) *corev1ac.PersistentVolumeClaimApplyConfiguration {
		spec := corev1ac.PersistentVolumeClaimSpec().
			WithAccessModes(corev1.ReadWriteOnce).
			WithResources(corev1ac.VolumeResourceRequirements().WithRequests(corev1.ResourceList{corev1.ResourceStorage: size}))
		if volumeName != "" {
			spec.WithVolumeName(volumeName)
		}
		c := corev1ac.PersistentVolumeClaim("home", "team-a").
			WithLabels(map[string]string{"automount": "true", LabelTemplate: "home"}).
			WithSpec(spec)
		if annotations != nil {
			c.WithAnnotations(annotations)
		}
		return c
	}
	tests := []struct {
		reason     string
		owner      string
		volumeName string
		want       *corev1ac.PersistentVolumeClaimApplyConfiguration
	}{
		{reason: "a new claim names no volume and carries its owner", owner: "alice@example.com", want: claim("", map[string]string{AnnotationOwner: "alice@example.com"})},
		{reason: "a claim bound again names its volume", owner: "alice@example.com", volumeName: "pv-1", want: claim("pv-1", map[string]string{AnnotationOwner: "alice@example.com"})},
		{reason: "a Profile without an owner gives the claim no owner annotation", want: claim("", nil)},
	}
	for _, tt := range tests {
		got := Claim(profile("team-a", tt.owner), home, size, tt.volumeName)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: claim (-want +got):\n%s", tt.reason, diff)
		}
	}
	if _, ok := home.Labels[LabelTemplate]; ok {
		t.Errorf("Claim wrote its template label into the template's own labels: %v", home.Labels)
	}
}

func TestVolumeProfiles(t *testing.T) {
	ours := map[string]string{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: Kind, plugins.LabelProfile: "team-a"}
	pv := func(labels map[string]string, ref *corev1.ObjectReference) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1", Labels: labels}, Spec: corev1.PersistentVolumeSpec{ClaimRef: ref}}
	}
	with := func(k, v string) map[string]string { l := maps.Clone(ours); l[k] = v; return l }
	tests := []struct {
		reason string
		obj    client.Object
		want   []string
	}{
		{reason: "ours, unclaimed", obj: pv(ours, nil), want: []string{"team-a"}},
		{reason: "ours, claimed from another namespace", obj: pv(ours, &corev1.ObjectReference{Namespace: "team-b", Name: "home"}), want: []string{"team-a", "team-b"}},
		{reason: "ours, claimed from its own namespace", obj: pv(ours, &corev1.ObjectReference{Namespace: "team-a", Name: "home"}), want: []string{"team-a"}},
		{reason: "another manager's", obj: pv(with(plugins.LabelManagedBy, "someone"), &corev1.ObjectReference{Namespace: "team-b"}), want: []string{"team-b"}},
		{reason: "another plugin's", obj: pv(with(plugins.LabelPlugin, "blobcsi"), nil)},
		{reason: "ours for no Profile", obj: pv(with(plugins.LabelProfile, ""), nil)},
		{reason: "a claim reference without a namespace", obj: pv(nil, &corev1.ObjectReference{Name: "home"})},
		{reason: "not a volume", obj: &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Labels: ours}}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, volumeProfiles(t.Context(), tt.obj)); diff != "" {
			t.Errorf("%s: Profiles (-want +got):\n%s", tt.reason, diff)
		}
	}
}

func profile(name, owner string) *kubeflowv1.Profile {
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.Owner.Name = owner
	return p
}

func volume(name, profile, owner, template string, phase corev1.PersistentVolumePhase, created time.Time, ref *corev1.ObjectReference) corev1.PersistentVolume {
	return corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{
				plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelPlugin: Kind, plugins.LabelProfile: profile,
				LabelTemplate: template, LabelOwner: OwnerHash(owner),
			},
			Annotations: map[string]string{AnnotationOwner: owner},
		},
		Spec:   corev1.PersistentVolumeSpec{ClaimRef: ref},
		Status: corev1.PersistentVolumeStatus{Phase: phase},
	}
}

func TestRetained(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := &corev1.ObjectReference{Namespace: "alice", Name: "home", UID: "old"}
	other := &corev1.ObjectReference{Namespace: "elsewhere", Name: "home", UID: "x"}
	tests := []struct {
		reason string
		seek   Seeker
		pvs    []corev1.PersistentVolume
		want   string
	}{
		{
			reason: "the volume released by the same Profile and owner",
			seek:   Seeker{Profile: "alice", Owner: "alice@example.org", Match: MatchProfile, Template: "home"},
			pvs:    []corev1.PersistentVolume{volume("pv1", "alice", "alice@example.org", "home", corev1.VolumeReleased, t0, old)},
			want:   "pv1",
		},
		{
			reason: "another owner's volume of the same Profile name and template is never given",
			seek:   Seeker{Profile: "alice", Owner: "mallory@example.org", Match: MatchProfile, Template: "home"},
			pvs:    []corev1.PersistentVolume{volume("pv1", "alice", "alice@example.org", "home", corev1.VolumeReleased, t0, old)},
		},
		{
			reason: "another owner's volume is never given when matching by owner either",
			seek:   Seeker{Profile: "alice", Owner: "mallory@example.org", Match: MatchOwner, Template: "home"},
			pvs:    []corev1.PersistentVolume{volume("pv1", "alice", "alice@example.org", "home", corev1.VolumeReleased, t0, old)},
		},
		{
			reason: "another template's volume is not given",
			seek:   Seeker{Profile: "alice", Owner: "alice@example.org", Match: MatchProfile, Template: "scratch"},
			pvs:    []corev1.PersistentVolume{volume("pv1", "alice", "alice@example.org", "home", corev1.VolumeReleased, t0, old)},
		},
		{
			reason: "a renamed Profile gets its owner's volume when matching by owner",
			seek:   Seeker{Profile: "alice-new", Owner: "alice@example.org", Match: MatchOwner, Template: "home"},
			pvs:    []corev1.PersistentVolume{volume("pv1", "alice", "alice@example.org", "home", corev1.VolumeReleased, t0, other)},
			want:   "pv1",
		},
		{
			reason: "a renamed Profile gets nothing when matching by Profile",
			seek:   Seeker{Profile: "alice-new", Owner: "alice@example.org", Match: MatchProfile, Template: "home"},
			pvs:    []corev1.PersistentVolume{volume("pv1", "alice", "alice@example.org", "home", corev1.VolumeReleased, t0, other)},
		},
		{
			reason: "a volume still bound to another claim is not given",
			seek:   Seeker{Profile: "alice-new", Owner: "alice@example.org", Match: MatchOwner, Template: "home"},
			pvs:    []corev1.PersistentVolume{volume("pv1", "alice", "alice@example.org", "home", corev1.VolumeBound, t0, other)},
		},
		{
			reason: "of several released volumes the oldest",
			seek:   Seeker{Profile: "alice", Owner: "alice@example.org", Match: MatchOwner, Template: "home"},
			pvs: []corev1.PersistentVolume{
				volume("pv2", "a2", "alice@example.org", "home", corev1.VolumeReleased, t0.Add(time.Hour), other),
				volume("pv1", "a1", "alice@example.org", "home", corev1.VolumeReleased, t0, other),
			},
			want: "pv1",
		},
		{
			reason: "the volume already reserved for the claim wins over an older one",
			seek:   Seeker{Profile: "alice", Owner: "alice@example.org", Match: MatchOwner, Template: "home"},
			pvs: []corev1.PersistentVolume{
				volume("pv1", "a1", "alice@example.org", "home", corev1.VolumeReleased, t0, other),
				volume("pv2", "alice", "alice@example.org", "home", corev1.VolumeAvailable, t0.Add(time.Hour), &corev1.ObjectReference{Namespace: "alice", Name: "home"}),
			},
			want: "pv2",
		},
		{
			reason: "an unlabelled volume is never given",
			seek:   Seeker{Profile: "alice", Owner: "alice@example.org", Match: MatchProfile, Template: "home"},
			pvs:    []corev1.PersistentVolume{{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}, Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased}}},
		},
	}
	for _, tt := range tests {
		got := ""
		if pv := tt.seek.Retained(tt.pvs, "alice", "home"); pv != nil {
			got = pv.Name
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.reason, diff)
		}
	}
}

func TestState(t *testing.T) {
	p := profile("alice", "alice@example.org")
	home := Template{Name: "home"}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	kept := State(Kind, p, home, corev1.PersistentVolumeReclaimRetain, time.Time{})
	live := func(labels, annotations map[string]string, reclaim corev1.PersistentVolumeReclaimPolicy) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: reclaim}}
	}
	released := kept.Released(live(nil, nil, ""), at)
	tests := []struct {
		reason string
		state  VolumeState
		live   *corev1.PersistentVolume
		want   bool
	}{
		{reason: "a provisioned volume needs our labels and Retain", state: kept,
			live: live(nil, map[string]string{"pv.kubernetes.io/provisioned-by": "x"}, corev1.PersistentVolumeReclaimDelete)},
		{reason: "a volume with our labels and Retain holds, whatever else it carries", state: kept,
			live: live(merge(kept.Labels, map[string]string{"other": "x"}), merge(kept.Annotations, map[string]string{"other": "y"}), corev1.PersistentVolumeReclaimRetain), want: true},
		{reason: "the wrong reclaim policy does not hold", state: kept,
			live: live(kept.Labels, kept.Annotations, corev1.PersistentVolumeReclaimDelete)},
		{reason: "a release mark on a volume given back does not hold", state: kept,
			live: live(released.Labels, released.Annotations, corev1.PersistentVolumeReclaimRetain)},
		{reason: "a released volume holds its mark", state: released,
			live: live(released.Labels, released.Annotations, corev1.PersistentVolumeReclaimRetain), want: true},
	}
	for _, tt := range tests {
		if got := tt.state.Holds(tt.live); got != tt.want {
			t.Errorf("%s: Holds = %v, want %v", tt.reason, got, tt.want)
		}
	}

	if diff := cmp.Diff("1772366400", released.Labels[LabelReleasedAt]); diff != "" {
		t.Errorf("release mark (-want +got):\n%s", diff)
	}
	again := kept.Released(live(released.Labels, released.Annotations, ""), at.Add(48*time.Hour))
	if diff := cmp.Diff(released, again); diff != "" {
		t.Errorf("a second release moved the first mark (-want +got):\n%s", diff)
	}
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func TestReclaim(t *testing.T) {
	retain := &storagev1.StorageClass{ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimRetain)}
	tests := []struct {
		reason    string
		retention plugins.Retention
		sc        *storagev1.StorageClass
		want      corev1.PersistentVolumeReclaimPolicy
	}{
		{reason: "Retain by default", want: corev1.PersistentVolumeReclaimRetain},
		{reason: "Retain whatever the class says", retention: plugins.RetentionRetain, sc: &storagev1.StorageClass{}, want: corev1.PersistentVolumeReclaimRetain},
		{reason: "Delete restores the class's Delete (its default)", retention: plugins.RetentionDelete, sc: &storagev1.StorageClass{}, want: corev1.PersistentVolumeReclaimDelete},
		{reason: "Delete restores a class's Retain", retention: plugins.RetentionDelete, sc: retain, want: corev1.PersistentVolumeReclaimRetain},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Reclaim(tt.retention, tt.sc)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.reason, diff)
		}
	}
}

func TestValidate(t *testing.T) {
	base := func() *Config {
		c := NewConfig()
		c.Templates = []Template{{Name: "home", Size: resource.MustParse("10Gi"), MaxSize: resource.MustParse("50Gi")}, {Name: "scratch", Size: resource.MustParse("5Gi")}}
		return c
	}
	tests := []struct {
		reason string
		mutate func(*Config)
		want   string
	}{
		{reason: "the defaults and two templates are valid", mutate: func(*Config) {}},
		{reason: "a size within the cap", mutate: func(c *Config) { c.Volumes = []Volume{{Template: "home", Size: q("50Gi")}} }},
		{reason: "a template the host does not offer", mutate: func(c *Config) { c.Volumes = []Volume{{Template: "nope"}} }, want: `volumes[0].template "nope"`},
		{reason: "a size above the cap", mutate: func(c *Config) { c.Volumes = []Volume{{Template: "home", Size: q("60Gi")}} }, want: "volumes[0].size 60Gi is above the template's cap 50Gi"},
		{reason: "a size for a fixed template", mutate: func(c *Config) { c.Volumes = []Volume{{Template: "scratch", Size: q("6Gi")}} }, want: `template "scratch" has a fixed size`},
		{reason: "a template chosen twice", mutate: func(c *Config) { c.Volumes = []Volume{{Template: "home"}, {Template: "home"}} }, want: "chosen twice"},
		{reason: "an upstream claim name", mutate: func(c *Config) { c.Templates[0].ClaimName = "default-editor" }, want: "upstream profile controller"},
		{reason: "a bad automount label", mutate: func(c *Config) { c.Templates[0].Labels = map[string]string{"bad key!": "true"} }, want: "templates[0].labels[bad key!]"},
		{reason: "an unknown match", mutate: func(c *Config) { c.Match = "Group" }, want: `match "Group"`},
		{reason: "a cap below the size", mutate: func(c *Config) { c.Templates[0].MaxSize = resource.MustParse("1Gi") }, want: "templates[0].maxSize 1Gi is below size 10Gi"},
		{reason: "no deletes per sweep", mutate: func(c *Config) { c.MaxDeletesPerSweep = 0 }, want: "maxDeletesPerSweep 0"},
		{reason: "a size below the template's", mutate: func(c *Config) { c.Volumes = []Volume{{Template: "home", Size: q("5Gi")}} }, want: "volumes[0].size 5Gi is below the template's size 10Gi"},
		{reason: "a fixed template's own size", mutate: func(c *Config) { c.Volumes = []Volume{{Template: "scratch", Size: q("5Gi")}} }},
		{reason: "a template of size zero", mutate: func(c *Config) { c.Templates[1].Size = resource.Quantity{} }, want: `templates[1].size "0": must be positive`},
		{reason: "a cap equal to the size", mutate: func(c *Config) { c.Templates[0].MaxSize = resource.MustParse("10Gi") }},
		{reason: "no time between sweeps", mutate: func(c *Config) { c.SweepInterval.Duration = 0 }, want: "sweepInterval 0s: must be positive"},
		{reason: "a negative retention", mutate: func(c *Config) { c.RetainFor.Duration = -time.Hour }, want: "retainFor -1h0m0s is negative"},
	}
	for _, tt := range tests {
		c := base()
		tt.mutate(c)
		err := c.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: Validate() = %q, want an error containing %q", tt.reason, got, tt.want)
		}
	}
}
