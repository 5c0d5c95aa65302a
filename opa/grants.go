package opa

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Bucket is one shared bucket (a blob container) and the namespaces that may
// mount it. Its JSON is the shape of one entry of a grants list:
//
//	{"bucketName": "census", "pvName": "census-ro", "subfolder": "2026",
//	 "readers": ["team-a"], "writers": ["team-b"], "spn": "sp-census"}
type Bucket struct {
	// Name is the container's name in the storage account.
	Name string `json:"bucketName"`
	// Volume names the volumes made for it (the PersistentVolume's name
	// part). Default: the bucket name.
	Volume string `json:"pvName,omitempty"`
	// Subfolder, when set, is the folder inside the container to mount.
	Subfolder string `json:"subfolder,omitempty"`
	// Readers are the namespaces that may mount it read-only.
	Readers []string `json:"readers,omitempty"`
	// Writers are the namespaces that may mount it read-write.
	Writers []string `json:"writers,omitempty"`
	// Identity is the identity that mounts it, such as a service principal
	// name; it picks the mount credentials.
	Identity string `json:"spn,omitempty"`
}

// Mode is how a namespace may mount a bucket.
type Mode string

// The modes. A writer can always read.
const (
	ReadOnly  Mode = "ReadOnly"
	ReadWrite Mode = "ReadWrite"
)

// Access is one bucket a namespace may mount, and how.
type Access struct {
	Bucket
	Mode Mode
}

// Grants is one snapshot of a grants document: the buckets sorted by volume
// name, each with sorted, unique readers and writers. The zero value grants
// nothing. A Grants is not modified after it is made, so it may be shared.
type Grants struct {
	buckets []Bucket
	// access maps a namespace to what it may mount, sorted by volume.
	access map[string][]Access
	// n is the number of grants, the length of every access list together.
	n int
}

// Grant is one namespace's access to one volume, whatever the mode: the
// unit that the drop guard counts.
type Grant struct {
	Namespace string
	Volume    string
}

// NewGrants checks and normalises buckets into a snapshot. Errors name the
// bucket and the field.
func NewGrants(buckets []Bucket) (Grants, error) {
	var errs []error
	out := make([]Bucket, 0, len(buckets))
	seen := map[string]bool{}
	for _, b := range buckets {
		b.Readers = uniqueSorted(b.Readers)
		b.Writers = uniqueSorted(b.Writers)
		if b.Volume == "" {
			b.Volume = b.Name
		}
		if err := b.validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[b.Volume] {
			errs = append(errs, fmt.Errorf("bucket %q: pvName %q is used twice", b.Name, b.Volume))
			continue
		}
		seen[b.Volume] = true
		out = append(out, b)
	}
	if err := errors.Join(errs...); err != nil {
		return Grants{}, err
	}
	slices.SortFunc(out, func(a, b Bucket) int { return cmp.Compare(a.Volume, b.Volume) })
	g := Grants{buckets: out, access: map[string][]Access{}}
	// Buckets are taken in volume order and each gives a namespace one
	// access at most, so every namespace's list comes out sorted by volume.
	for _, b := range out {
		for _, ns := range b.Readers {
			if _, writes := slices.BinarySearch(b.Writers, ns); !writes {
				g.access[ns] = append(g.access[ns], Access{Bucket: b, Mode: ReadOnly})
				g.n++
			}
		}
		for _, ns := range b.Writers {
			g.access[ns] = append(g.access[ns], Access{Bucket: b, Mode: ReadWrite})
			g.n++
		}
	}
	return g, nil
}

func (b Bucket) validate() error {
	var errs []error
	if err := ValidateContainerName(b.Name); err != nil {
		errs = append(errs, fmt.Errorf("bucketName: %w", err))
	}
	if msgs := validation.IsDNS1123Label(b.Volume); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("pvName %q: %s", b.Volume, strings.Join(msgs, "; ")))
	}
	if b.Subfolder != "" {
		clean := path.Clean("/" + b.Subfolder)
		if clean == "/" || strings.Contains(b.Subfolder, "..") || strings.ContainsAny(b.Subfolder, "\\\x00") {
			errs = append(errs, fmt.Errorf("subfolder %q: want a relative folder, with no .. in it", b.Subfolder))
		}
	}
	for _, ns := range slices.Concat(b.Readers, b.Writers) {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("namespace %q: %s", ns, strings.Join(msgs, "; ")))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bucket %q: %w", b.Name, err)
	}
	return nil
}

// ValidateContainerName checks an Azure blob container name: 3 to 63
// characters, lower-case letters, digits and single hyphens, starting and
// ending with a letter or digit.
func ValidateContainerName(name string) error {
	if len(name) < 3 || len(name) > 63 {
		return fmt.Errorf("%q: want 3 to 63 characters", name)
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case r == '-' && i > 0 && i < len(name)-1 && name[i-1] != '-':
		default:
			return fmt.Errorf("%q: want lower-case letters, digits and single hyphens, starting and ending with a letter or digit", name)
		}
	}
	return nil
}

func uniqueSorted(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

// Buckets returns the buckets, sorted by volume name.
func (g Grants) Buckets() []Bucket {
	if len(g.buckets) == 0 {
		return nil
	}
	return slices.Clone(g.buckets)
}

// For returns the buckets namespace ns may mount, sorted by volume name.
func (g Grants) For(ns string) []Access { return slices.Clone(g.access[ns]) }

// Namespaces returns every namespace that may mount something, sorted.
func (g Grants) Namespaces() []string { return slices.Sorted(maps.Keys(g.access)) }

// Len returns the number of grants: pairs of a bucket and a namespace.
func (g Grants) Len() int { return g.n }

// Changed returns the namespaces whose access differs between old and next,
// sorted. Its work is linear in the grants of both.
func Changed(old, next Grants) []string {
	var out []string
	for ns, as := range old.access {
		if !slices.EqualFunc(as, next.access[ns], equalAccess) {
			out = append(out, ns)
		}
	}
	for ns := range next.access {
		if _, ok := old.access[ns]; !ok {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out
}

// Dropped returns how many of old's grants next no longer has (changed modes
// count as kept). Its work is linear in the grants of both: each
// namespace's two lists, sorted by volume, are walked side by side.
func Dropped(old, next Grants) int {
	n := 0
	for ns, as := range old.access {
		bs := next.access[ns]
		j := 0
		for _, a := range as {
			for j < len(bs) && bs[j].Volume < a.Volume {
				j++
			}
			if j == len(bs) || bs[j].Volume != a.Volume {
				n++
			}
		}
	}
	return n
}

// DroppedFrom returns how many of the grants in base g does not have, and
// how many distinct grants base holds. Its work is linear in base and g.
func DroppedFrom(base []Grant, g Grants) (dropped, total int) {
	in := make(map[Grant]bool, len(base))
	for _, b := range base {
		in[b] = true
	}
	kept := 0
	for ns, as := range g.access {
		for _, a := range as {
			if in[Grant{Namespace: ns, Volume: a.Volume}] {
				kept++
			}
		}
	}
	return len(in) - kept, len(in)
}

func equalAccess(a, b Access) bool {
	return a.Mode == b.Mode && a.Name == b.Name && a.Volume == b.Volume && a.Subfolder == b.Subfolder && a.Identity == b.Identity
}

// Decode reads a grants document in either shape:
//
//   - a list of buckets: [{"bucketName": ..., "pvName": ..., "subfolder": ...,
//     "readers": [...], "writers": [...], "spn": ...}, ...]
//   - the gateway shape, an object keyed by bucket name:
//     {"<bucket>": {"readers": [...], "writers": [...], "spn": ..., "name": "<pv name>"}};
//     keys whose value is not an object with readers or writers (such as
//     httpapi) are not buckets and are ignored.
//
// Unknown fields in a bucket are errors, so that a misspelt field cannot
// silently drop a grant. null and any other JSON value are errors.
func Decode(data []byte) (Grants, error) {
	data = bytes.TrimSpace(data)
	switch {
	case len(data) == 0:
		return Grants{}, fmt.Errorf("grants: empty document")
	case data[0] == '[':
		return DecodeList(data)
	case data[0] == '{':
		return DecodeGateway(data)
	}
	return Grants{}, fmt.Errorf("grants: want a list of buckets or an object keyed by bucket, got %.40s", data)
}

// DecodeList reads a list of buckets.
func DecodeList(data []byte) (Grants, error) {
	var buckets []Bucket
	if err := strict(data, &buckets); err != nil {
		return Grants{}, fmt.Errorf("grants: %w", err)
	}
	if buckets == nil && !bytes.Equal(bytes.TrimSpace(data), []byte("[]")) {
		return Grants{}, fmt.Errorf("grants: want a list of buckets, got %.40s", data)
	}
	g, err := NewGrants(buckets)
	if err != nil {
		return Grants{}, fmt.Errorf("grants: %w", err)
	}
	return g, nil
}

// gatewayBucket is one value of the gateway shape.
type gatewayBucket struct {
	Readers   []string `json:"readers"`
	Writers   []string `json:"writers"`
	Identity  string   `json:"spn"`
	Volume    string   `json:"name"`
	Subfolder string   `json:"subfolder"`
}

// DecodeGateway reads the gateway shape, an object keyed by bucket name.
func DecodeGateway(data []byte) (Grants, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return Grants{}, fmt.Errorf("grants: %w", err)
	}
	if doc == nil {
		return Grants{}, fmt.Errorf("grants: want an object keyed by bucket, got %.40s", data)
	}
	var buckets []Bucket
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(doc)) {
		raw := doc[name]
		if !isBucket(raw) {
			continue
		}
		var gb gatewayBucket
		if err := strict(raw, &gb); err != nil {
			errs = append(errs, fmt.Errorf("bucket %q: %w", name, err))
			continue
		}
		buckets = append(buckets, Bucket{Name: name, Volume: gb.Volume, Subfolder: gb.Subfolder,
			Readers: gb.Readers, Writers: gb.Writers, Identity: gb.Identity})
	}
	if err := errors.Join(errs...); err != nil {
		return Grants{}, fmt.Errorf("grants: %w", err)
	}
	g, err := NewGrants(buckets)
	if err != nil {
		return Grants{}, fmt.Errorf("grants: %w", err)
	}
	return g, nil
}

// isBucket reports whether a gateway value describes a bucket: an object
// with a readers or a writers field.
func isBucket(raw json.RawMessage) bool {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return false
	}
	_, r := fields["readers"]
	_, w := fields["writers"]
	return r || w
}

func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the document")
	}
	return nil
}
