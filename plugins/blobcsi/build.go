package blobcsi

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/opa"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/placeholders"
)

// Labels the plugin puts on its volumes besides the ownership labels, so
// that a pass knows where a volume came from without asking anyone.
const (
	// LabelInstance names the storage instance of a volume.
	LabelInstance = "blobcsi.profilekit.dev/instance"
	// LabelSource names the grants source of a shared bucket's volume; a
	// Profile's own volumes do not have it.
	LabelSource = "blobcsi.profilekit.dev/source"
)

// Volume is one PersistentVolume and PersistentVolumeClaim pair the Profile
// should have.
type Volume struct {
	// Name is the instance's name, or a shared bucket's volume name.
	Name string
	// Instance holds the container.
	Instance Instance
	// Container is the blob container mounted.
	Container string
	// Subfolder, when set, is the folder of the container mounted.
	Subfolder string
	// ReadOnly mounts it read-only.
	ReadOnly bool
	// Source names the grants source of a shared bucket; empty for the
	// Profile's own container.
	Source string
	// Principal is the service principal a shared bucket's grant names
	// (its spn) to mount it with; empty for the instance's credentials.
	Principal string
	// PV and Claim are the object names.
	PV, Claim string
}

var volumeRE = regexp.MustCompile(`\{\{\s*\.Volume\s*\}\}`)

// render expands a naming template for a namespace and a volume.
func render(tmpl, namespace, volume string) (string, error) {
	if err := placeholders.Check(tmpl, placeholders.Namespace, placeholders.Profile, "Volume"); err != nil {
		return "", err
	}
	s := placeholders.Expand(tmpl, placeholders.Values{Namespace: namespace, Profile: namespace})
	return volumeRE.ReplaceAllLiteralString(s, volume), nil
}

// ContainerName turns a rendered name into a valid blob container name:
// lower case, letters, digits and single hyphens, 3 to 63 characters. A
// valid name stays as it is, unless it ends like a hashed name (a hyphen and
// 20 hexadecimal digits); any other name becomes its letters and digits, cut
// to fit, a hyphen, and 20 hexadecimal digits of the SHA-256 of the whole
// name. Kept names never end like hashed ones, so the two forms never meet,
// and two hashed names meet only if 80 bits of SHA-256 collide: the mapping
// is injective, and stable.
func ContainerName(s string) string {
	if opa.ValidateContainerName(s) == nil && !hashedName.MatchString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else if !strings.HasSuffix(b.String(), "-") {
			b.WriteByte('-')
		}
	}
	sum := sha256.Sum256([]byte(s))
	suffix := hex.EncodeToString(sum[:])[:hashDigits]
	base := strings.Trim(b.String(), "-")
	if len(base) > 63-hashDigits-1 {
		base = strings.Trim(base[:63-hashDigits-1], "-")
	}
	if base == "" {
		base = "c"
	}
	return base + "-" + suffix
}

// hashDigits is the length of the hash that ends a hashed container name.
const hashDigits = 20

// hashedName matches the end of every hashed container name.
var hashedName = regexp.MustCompile(`-[0-9a-f]{20}$`)

// Desired returns the volumes the Profile should have: one per chosen
// instance, and one per shared bucket the grants give its namespace (a
// reader read-only, a writer read-write), sorted by claim name. grants maps
// a source's name to its snapshot; a source missing from it contributes
// nothing. Two volumes with one claim or PV name are an InvalidConfig error.
func Desired(cfg *Config, p *kubeflowv1.Profile, grants map[string]opa.Grants) ([]Volume, error) {
	ns := plugins.Namespace(p)
	var out []Volume
	var errs []error
	add := func(v Volume) {
		var err error
		if v.PV, err = render(cfg.Names.PersistentVolume, ns, v.Name); err == nil {
			v.Claim, err = render(cfg.Names.Claim, ns, v.Name)
		}
		if err != nil {
			errs = append(errs, err)
			return
		}
		for what, name := range map[string]string{"PersistentVolume": v.PV, "PersistentVolumeClaim": v.Claim} {
			if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("volume %s: %s name %q: %s", v.Name, what, name, strings.Join(msgs, "; ")))
				return
			}
		}
		out = append(out, v)
	}
	for _, in := range cfg.Chosen() {
		name, err := render(cfg.Names.Container, ns, in.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		add(Volume{Name: in.Name, Instance: in, Container: ContainerName(name), ReadOnly: in.ReadOnly})
	}
	for _, src := range cfg.GrantSources {
		g, ok := grants[src.Name]
		if !ok {
			continue
		}
		in, _ := cfg.Instance(src.Instance)
		for _, a := range g.For(ns) {
			add(Volume{Name: a.Volume, Instance: in, Container: a.Bucket.Name, Subfolder: a.Subfolder,
				ReadOnly: a.Mode == opa.ReadOnly || in.ReadOnly, Source: src.Name, Principal: a.Identity})
		}
	}
	slices.SortFunc(out, func(a, b Volume) int { return cmp.Compare(a.Claim, b.Claim) })
	for i := 1; i < len(out); i++ {
		if out[i].Claim == out[i-1].Claim || out[i].PV == out[i-1].PV {
			errs = append(errs, fmt.Errorf("volumes %s and %s would share the claim %q; rename one (an instance and a shared bucket's pvName must differ)",
				volumeID(out[i-1]), volumeID(out[i]), out[i].Claim))
		}
	}
	if len(errs) > 0 {
		return out, plugins.Terminal(plugins.ReasonInvalidConfig, fmt.Errorf("plugin %s: %w", Kind, joinErrs(errs)))
	}
	return out, nil
}

func volumeID(v Volume) string {
	if v.Source == "" {
		return "instance " + v.Name
	}
	return fmt.Sprintf("bucket %s from %s", v.Name, v.Source)
}

func joinErrs(errs []error) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// AccessMode returns the volume's access mode.
func (v Volume) AccessMode() corev1.PersistentVolumeAccessMode {
	if v.ReadOnly {
		return corev1.ReadOnlyMany
	}
	return corev1.ReadWriteMany
}

// VolumeHandle is unique per PersistentVolume in the cluster, as the driver
// needs: the account, the container, and the PV's name.
func (v Volume) VolumeHandle() string {
	return strings.Join([]string{v.Instance.ResourceGroup, v.Instance.Account, v.Container, v.PV}, "#")
}

func (v Volume) labels(cfg *Config) map[string]string {
	l := map[string]string{LabelInstance: v.Instance.Name}
	if v.Source != "" {
		l[LabelSource] = v.Source
	}
	if v.Instance.Classification != "" {
		l[cfg.Names.ClassificationLabel] = v.Instance.Classification
	}
	return l
}

// MountOptions returns the driver's mount options: the instance's, then the
// subfolder, then -o ro for a read-only volume.
func (v Volume) MountOptions() []string {
	opts := slices.Clone(v.Instance.MountOptions)
	if v.Subfolder != "" {
		opts = append(opts, "--subdirectory="+v.Subfolder)
	}
	if v.ReadOnly && !slices.Contains(opts, "-o ro") {
		opts = append(opts, "-o ro")
	}
	return opts
}

// BuildPV returns the PersistentVolume of v for namespace ns: Retain, the
// blob CSI driver, a unique volume handle, the container's attributes, the
// mount's Secret (and a service principal's attributes, see MountFor), and
// a claim reference to the PVC. v's mount must resolve: Apply writes no
// volume whose MountFor fails.
func BuildPV(cfg *Config, ns string, v Volume) *corev1ac.PersistentVolumeApplyConfiguration {
	mount, _ := cfg.MountFor(v)
	attrs := map[string]string{
		"storageAccount": v.Instance.Account,
		"containerName":  v.Container,
		"protocol":       v.Instance.protocol(),
	}
	if v.Instance.ResourceGroup != "" {
		attrs["resourceGroup"] = v.Instance.ResourceGroup
	}
	maps.Copy(attrs, mount.attributes())
	csi := corev1ac.CSIPersistentVolumeSource().
		WithDriver(Driver).
		WithVolumeHandle(v.VolumeHandle()).
		WithVolumeAttributes(attrs).
		WithNodeStageSecretRef(corev1ac.SecretReference().
			WithName(mount.Secret.Name).
			WithNamespace(mount.Secret.Namespace))
	if v.ReadOnly {
		csi = csi.WithReadOnly(true)
	}
	claim := corev1ac.ObjectReference().
		WithAPIVersion("v1").
		WithKind("PersistentVolumeClaim").
		WithNamespace(ns).
		WithName(v.Claim)
	spec := corev1ac.PersistentVolumeSpec().
		WithCapacity(corev1.ResourceList{corev1.ResourceStorage: v.Instance.capacity()}).
		WithAccessModes(v.AccessMode()).
		WithPersistentVolumeReclaimPolicy(corev1.PersistentVolumeReclaimRetain).
		WithStorageClassName("").
		WithCSI(csi).
		WithClaimRef(claim).
		WithMountOptions(v.MountOptions()...) // none: the field stays out
	return corev1ac.PersistentVolume(v.PV).
		WithLabels(v.labels(cfg)).
		WithSpec(spec)
}

// BuildPVC returns the PersistentVolumeClaim of v in namespace ns, bound
// in advance to its PersistentVolume, with the host's PVC labels.
func BuildPVC(cfg *Config, ns string, v Volume) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	l := v.labels(cfg)
	for k, val := range cfg.PVCLabels {
		l[k] = val
	}
	return corev1ac.PersistentVolumeClaim(v.Claim, ns).
		WithLabels(l).
		WithSpec(corev1ac.PersistentVolumeClaimSpec().
			WithAccessModes(v.AccessMode()).
			WithStorageClassName("").
			WithVolumeName(v.PV).
			WithResources(corev1ac.VolumeResourceRequirements().
				WithRequests(corev1.ResourceList{corev1.ResourceStorage: v.Instance.capacity()})))
}
