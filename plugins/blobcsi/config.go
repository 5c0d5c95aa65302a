package blobcsi

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilekit/profilekit/opa"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// Kind is the plugin's name in spec.plugins.
const Kind = "blobcsi"

// Driver is the blob CSI driver's name.
const Driver = "blob.csi.azure.com"

// Config is the blobcsi plugin's configuration. A Profile may set Instances
// (among those the host offers); every other field is the host's.
type Config struct {
	// Storage lists the storage instances the host offers.
	Storage []Instance `json:"storage,omitempty" profilekit:"hostonly"`
	// Instances names the instances the Profile gets. Empty means every
	// instance whose default is true.
	Instances []string `json:"instances,omitempty"`
	// GrantSources are the sources of shared-bucket grants, one per
	// classification; each names the instance whose account holds its buckets.
	GrantSources []GrantSource `json:"grantSources,omitempty" profilekit:"hostonly"`
	// Principals are the service principals that mount shared buckets (a
	// bucket's grant names one by its key, as spn) or that instances create
	// containers with.
	Principals map[string]Principal `json:"principals,omitempty" profilekit:"hostonly"`
	// PVCLabels are added to every PersistentVolumeClaim, such as a label that
	// makes notebooks mount it automatically.
	PVCLabels map[string]string `json:"pvcLabels,omitempty" profilekit:"hostonly"`
	// Names are the naming templates.
	Names Names `json:"names,omitempty" profilekit:"hostonly"`
	// MaxVolumeDeletes bounds how many volumes (PVC and PV pairs) the plugin
	// deletes cluster-wide within DeleteWindow. A pass that would delete more
	// deletes none and reports why. Default 20.
	MaxVolumeDeletes int `json:"maxVolumeDeletes,omitempty" profilekit:"hostonly"`
	// DeleteWindow is the period MaxVolumeDeletes counts over. Default 10m.
	DeleteWindow metav1.Duration `json:"deleteWindow,omitempty" profilekit:"hostonly"`
	// DeleteRecord is the ConfigMap in which the plugin records its volume
	// deletions across the cluster, so that MaxVolumeDeletes holds across
	// restarts and across hosts. Default: DefaultDeleteRecord in the
	// namespace of the first storage instance's credentials Secret (or its
	// principal's Secret). A host that offers no instance names the
	// namespace here, or the plugin deletes no volume.
	DeleteRecord outside.ConfigMapRef `json:"deleteRecord,omitempty" profilekit:"hostonly"`
}

// Instance is one storage account offered to Profiles.
type Instance struct {
	// Name names the instance; it is part of volume names. A DNS label.
	Name string `json:"name"`
	// Classification labels the data it may hold, such as unclassified or
	// protected-b; it is the value of the classification label on the
	// instance's volumes.
	Classification string `json:"classification,omitempty"`
	// Account is the storage account's name.
	Account string `json:"account"`
	// ResourceGroup is the account's resource group, for the driver.
	ResourceGroup string `json:"resourceGroup,omitempty"`
	// BlobEndpoint is the account's blob service address. Default
	// https://<account>.blob.core.windows.net.
	BlobEndpoint string `json:"blobEndpoint,omitempty"`
	// Credentials say how profilekit reaches the account (to create
	// containers) and which Secret the driver mounts with.
	Credentials Credentials `json:"credentials"`
	// Capacity is the volumes' capacity. Default 1Ti.
	Capacity *resource.Quantity `json:"capacity,omitempty"`
	// ReadOnly mounts the instance's volumes read-only.
	ReadOnly bool `json:"readOnly,omitempty"`
	// MountOptions are passed to the driver.
	MountOptions []string `json:"mountOptions,omitempty"`
	// Protocol is the driver's protocol: fuse, fuse2 or nfs. Default fuse2.
	Protocol string `json:"protocol,omitempty"`
	// Default gives the instance to Profiles that do not choose.
	Default bool `json:"default,omitempty"`
	// AdoptContainers lets the plugin take over a container that exists at
	// a Profile's container name without profilekit's proof for that
	// Profile (made by hand, by other software, or for an earlier Profile
	// of the same name): it is stamped with the proof, mounted, and deleted
	// with the Profile when retention is Delete. Off by default: such a
	// container is a Conflict and is left untouched.
	AdoptContainers bool `json:"adoptContainers,omitempty"`
}

// GrantSource is where shared-bucket grants for one classification come from:
// an OPA gateway or a ConfigMap.
type GrantSource struct {
	// Name names the source in metrics and conditions.
	Name string `json:"name"`
	// Instance names the instance whose account holds the buckets.
	Instance string `json:"instance"`
	// OPA polls an OPA server.
	OPA *OPASource `json:"opa,omitempty"`
	// ConfigMap watches a ConfigMap.
	ConfigMap *ConfigMapSource `json:"configMap,omitempty"`
	// MaxDropShare is the share of current grants one refresh may withdraw.
	// Default 0.5.
	MaxDropShare float64 `json:"maxDropShare,omitempty"`
}

// OPASource is an OPA gateway's grants document.
type OPASource struct {
	// URL is the server's address, such as http://opa.gateway:8181.
	URL string `json:"url"`
	// Path is the document's path, such as storage/grants/unclassified.
	Path string `json:"path"`
	// Interval is how often it is asked. Default 30s.
	Interval metav1.Duration `json:"interval,omitempty"`
}

// ConfigMapSource is a ConfigMap of grants.
type ConfigMapSource struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Names are the templates of the names the plugin gives, with the
// placeholders {{ .Namespace }} and, for volumes, {{ .Volume }} (the
// instance's name, or a shared bucket's volume name).
type Names struct {
	// Container names a Profile's container in each account. Default
	// {{ .Namespace }}; names that are not valid container names are
	// made valid (see ContainerName).
	Container string `json:"container,omitempty"`
	// PersistentVolume names PersistentVolumes, cluster-wide. Default
	// {{ .Namespace }}.{{ .Volume }} (DefaultPVName): a namespace holds no
	// dot, so no two namespaces' volumes ever meet under one name. A
	// template under which two could meet is refused: one that joins them
	// with a character namespaces may hold (such as -) lets namespace q's
	// volume lab-census meet q-lab's census, a Conflict by which one tenant
	// could deny another a bucket.
	PersistentVolume string `json:"persistentVolume,omitempty"`
	// Claim names PersistentVolumeClaims in the Profile's namespace.
	// Default {{ .Volume }}.
	Claim string `json:"claim,omitempty"`
	// ClassificationLabel is the label key that carries an instance's
	// classification on its volumes. Default data.profilekit.dev/classification.
	ClassificationLabel string `json:"classificationLabel,omitempty"`
}

// Defaults.
const (
	// DefaultPVName is the default PersistentVolume name template. Volumes
	// that versions before it bound under {{ .Namespace }}-{{ .Volume }}
	// keep their names (see keepBoundNames).
	DefaultPVName           = "{{ .Namespace }}.{{ .Volume }}"
	DefaultMaxVolumeDeletes = 20
	DefaultDeleteWindow     = 10 * time.Minute
	DefaultDeleteRecord     = "profilekit-blobcsi-deletes"
)

// NewConfig returns a Config holding the built-in defaults.
func NewConfig() *Config {
	return &Config{
		Names: Names{
			Container:           "{{ .Namespace }}",
			PersistentVolume:    DefaultPVName,
			Claim:               "{{ .Volume }}",
			ClassificationLabel: "data.profilekit.dev/classification",
		},
		MaxVolumeDeletes: DefaultMaxVolumeDeletes,
		DeleteWindow:     metav1.Duration{Duration: DefaultDeleteWindow},
	}
}

// Validate checks every instance and source, and that the Profile's choice
// names instances the host offers.
func (c *Config) Validate() error {
	var errs []error
	seen := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(c.Principals)) {
		if name == "" {
			errs = append(errs, fmt.Errorf("principals: a principal has an empty name"))
		}
		if err := c.Principals[name].validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field.NewPath("principals").Key(name), err))
		}
	}
	for i, in := range c.Storage {
		if err := in.validate(c.Principals); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field.NewPath("storage").Index(i), err))
		}
		if seen[in.Name] {
			errs = append(errs, fmt.Errorf("%s: name %q is used twice", field.NewPath("storage").Index(i), in.Name))
		}
		seen[in.Name] = true
	}
	for i, name := range c.Instances {
		if !seen[name] {
			errs = append(errs, fmt.Errorf("%s: %q is not an instance the host offers (%s)", field.NewPath("instances").Index(i), name, strings.Join(c.instanceNames(), ", ")))
		}
	}
	sources := map[string]bool{}
	for i, s := range c.GrantSources {
		if err := s.validate(seen); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field.NewPath("grantSources").Index(i), err))
		}
		if sources[s.Name] {
			errs = append(errs, fmt.Errorf("%s: name %q is used twice", field.NewPath("grantSources").Index(i), s.Name))
		}
		sources[s.Name] = true
	}
	for k, v := range c.PVCLabels {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s: %s", field.NewPath("pvcLabels").Key(k), strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s=%q: %s", field.NewPath("pvcLabels").Key(k), v, strings.Join(msgs, "; ")))
		}
	}
	if msgs := validation.IsQualifiedName(c.Names.ClassificationLabel); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("names.classificationLabel %q: %s", c.Names.ClassificationLabel, strings.Join(msgs, "; ")))
	}
	for name, tmpl := range map[string]string{"container": c.Names.Container, "persistentVolume": c.Names.PersistentVolume, "claim": c.Names.Claim} {
		if _, err := render(tmpl, "example", "volume"); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field.NewPath("names").Child(name), err))
		}
	}
	if err := injective(c.Names.PersistentVolume); err != nil && !(playEarlierVersion && c.Names.PersistentVolume == legacyPVName) {
		errs = append(errs, fmt.Errorf("names.persistentVolume: %w", err))
	}
	if c.MaxVolumeDeletes < 0 {
		errs = append(errs, fmt.Errorf("maxVolumeDeletes %d: want zero or more", c.MaxVolumeDeletes))
	}
	if err := c.DeleteRecord.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("deleteRecord: %w", err))
	}
	if c.DeleteWindow.Duration <= 0 {
		errs = append(errs, fmt.Errorf("deleteWindow %s: want a positive duration", c.DeleteWindow.Duration))
	}
	return errors.Join(errs...)
}

func (c *Config) instanceNames() []string {
	var names []string
	for _, in := range c.Storage {
		names = append(names, in.Name)
	}
	return names
}

// Chosen returns the instances the Profile gets, in the host's order.
func (c *Config) Chosen() []Instance {
	var out []Instance
	for _, in := range c.Storage {
		if len(c.Instances) == 0 && in.Default || slices.Contains(c.Instances, in.Name) {
			out = append(out, in)
		}
	}
	return out
}

// deleteRecord returns where the volume deletion record lives.
func (c *Config) deleteRecord() outside.ConfigMapRef {
	ref := c.DeleteRecord
	if ref.Name == "" {
		ref.Name = DefaultDeleteRecord
	}
	if ref.Namespace == "" && len(c.Storage) > 0 {
		creds := c.Storage[0].Credentials
		ref.Namespace = creds.SecretNamespace
		if ref.Namespace == "" {
			ref.Namespace = c.Principals[creds.Principal].Secret.Namespace
		}
	}
	return ref
}

// Instance returns the instance named name.
func (c *Config) Instance(name string) (Instance, bool) {
	for _, in := range c.Storage {
		if in.Name == name {
			return in, true
		}
	}
	return Instance{}, false
}

func (in Instance) validate(principals map[string]Principal) error {
	var errs []error
	if msgs := validation.IsDNS1123Label(in.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("name %q: %s", in.Name, strings.Join(msgs, "; ")))
	}
	if in.Classification != "" {
		if msgs := validation.IsValidLabelValue(in.Classification); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("classification %q: %s", in.Classification, strings.Join(msgs, "; ")))
		}
	}
	if !validAccount(in.Account) {
		errs = append(errs, fmt.Errorf("account %q: want 3 to 24 lower-case letters and digits", in.Account))
	}
	if in.BlobEndpoint != "" {
		if u, err := url.Parse(in.BlobEndpoint); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("blobEndpoint %q: want http(s)://host[/path]", in.BlobEndpoint))
		}
	}
	if err := in.Credentials.validate(principals); err != nil {
		errs = append(errs, err)
	}
	if in.Capacity != nil && in.Capacity.Sign() <= 0 {
		errs = append(errs, fmt.Errorf("capacity %s: want a positive quantity", in.Capacity.String()))
	}
	switch in.Protocol {
	case "", "fuse", "fuse2", "nfs":
	default:
		errs = append(errs, fmt.Errorf("protocol %q: want fuse, fuse2 or nfs", in.Protocol))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("instance %q: %w", in.Name, err)
	}
	return nil
}

func validAccount(s string) bool {
	if len(s) < 3 || len(s) > 24 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func (s GrantSource) validate(instances map[string]bool) error {
	var errs []error
	if msgs := validation.IsDNS1123Label(s.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("name %q: %s", s.Name, strings.Join(msgs, "; ")))
	}
	if !instances[s.Instance] {
		errs = append(errs, fmt.Errorf("instance %q: not among storage", s.Instance))
	}
	switch {
	case (s.OPA == nil) == (s.ConfigMap == nil):
		errs = append(errs, fmt.Errorf("want exactly one of opa and configMap"))
	case s.OPA != nil:
		if _, err := opa.NewClient(s.OPA.URL); err != nil {
			errs = append(errs, fmt.Errorf("opa: %w", err))
		}
		if s.OPA.Path == "" {
			errs = append(errs, fmt.Errorf("opa.path: want the document's path"))
		}
		if s.OPA.Interval.Duration < 0 {
			errs = append(errs, fmt.Errorf("opa.interval %s: want zero (the default, 30s) or more", s.OPA.Interval.Duration))
		}
	case s.ConfigMap != nil:
		if s.ConfigMap.Namespace == "" || s.ConfigMap.Name == "" {
			errs = append(errs, fmt.Errorf("configMap: want namespace and name"))
		}
	}
	if s.MaxDropShare < 0 || s.MaxDropShare > 1 {
		errs = append(errs, fmt.Errorf("maxDropShare %v: want a share between 0 and 1", s.MaxDropShare))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("source %q: %w", s.Name, err)
	}
	return nil
}

// endpoint returns the instance's blob endpoint.
func (in Instance) endpoint() string {
	if in.BlobEndpoint != "" {
		return strings.TrimSuffix(in.BlobEndpoint, "/")
	}
	return "https://" + in.Account + ".blob.core.windows.net"
}

func (in Instance) capacity() resource.Quantity {
	if in.Capacity != nil {
		return *in.Capacity
	}
	return resource.MustParse("1Ti")
}

func (in Instance) protocol() string {
	if in.Protocol == "" {
		return "fuse2"
	}
	return in.Protocol
}

// sortedCopy is used to keep output deterministic.
var _ = plugins.RetentionRetain
