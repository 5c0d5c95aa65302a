package reconcilers

// This file holds the digests by which the held sets know the metadata
// values that cached objects share. Every cached object's labels,
// annotations, owner references and managed fields are looked up at each
// of its events, so their fields are written straight into the hashed bytes
// rather than encoded as JSON first, which took most of the transform's
// time.

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The append functions write values so that two sequences of values are
// written alike only when they are the same: every string and byte slice
// goes with its length, every optional value with whether it is set.

func appendLength(b []byte, n int) []byte { return binary.AppendUvarint(b, uint64(n)) }

func appendString(b []byte, s string) []byte { return append(appendLength(b, len(s)), s...) }

// appendSet writes whether an optional value is set.
func appendSet(b []byte, set bool) []byte {
	if set {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendOptionalBool(b []byte, v *bool) []byte {
	switch {
	case v == nil:
		return append(b, 0)
	case *v:
		return append(b, 2)
	default:
		return append(b, 1)
	}
}

// mapDigest is the digest of a map of strings: its entries in the order of
// their keys.
func mapDigest(m map[string]string) [sha256.Size]byte {
	var keysArray [16]string
	keys := keysArray[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var scratch [1024]byte
	b := appendLength(scratch[:0], len(keys))
	for _, k := range keys {
		b = appendString(appendString(b, k), m[k])
	}
	return sha256.Sum256(b)
}

// ownerRefsDigest is the digest of a list of owner references, every field
// of each (TestDigestsWriteEveryField keeps the list of fields complete).
func ownerRefsDigest(refs []metav1.OwnerReference) [sha256.Size]byte {
	var scratch [512]byte
	b := appendLength(scratch[:0], len(refs))
	for _, r := range refs {
		b = appendString(b, r.APIVersion)
		b = appendString(b, r.Kind)
		b = appendString(b, r.Name)
		b = appendString(b, string(r.UID))
		b = appendOptionalBool(b, r.Controller)
		b = appendOptionalBool(b, r.BlockOwnerDeletion)
	}
	return sha256.Sum256(b)
}

// entriesDigest is the digest of a list of managed-fields entries, every
// field of each; a time counts to the nanosecond, finer than the API
// server keeps it.
func entriesDigest(list []metav1.ManagedFieldsEntry) [sha256.Size]byte {
	var scratch [1024]byte
	b := appendLength(scratch[:0], len(list))
	for _, e := range list {
		b = appendString(b, e.Manager)
		b = appendString(b, string(e.Operation))
		b = appendString(b, e.APIVersion)
		b = appendSet(b, e.Time != nil)
		if e.Time != nil {
			b = binary.AppendVarint(b, e.Time.Unix())
			b = binary.AppendUvarint(b, uint64(e.Time.Nanosecond()))
		}
		b = appendString(b, e.FieldsType)
		b = appendSet(b, e.FieldsV1 != nil)
		if e.FieldsV1 != nil {
			raw := e.FieldsV1.Raw
			b = appendSet(b, raw != nil)
			b = append(appendLength(b, len(raw)), raw...)
		}
		b = appendString(b, e.Subresource)
	}
	return sha256.Sum256(b)
}

// treeDigest is the digest of a decoded JSON value, by which the set of
// such values knows them (treeSet): a map's from its keys, in order, and
// its values' digests; a list's from its items' digests; a scalar's from
// its type and value, so that an int64 and a float64 of one value are told
// apart. It reports false when v holds a value JSON cannot encode.
func treeDigest(v any) ([sha256.Size]byte, bool) {
	switch x := v.(type) {
	case map[string]any:
		children := make([]keyedDigest, 0, len(x))
		for k, child := range x {
			d, ok := treeDigest(child)
			if !ok {
				return [sha256.Size]byte{}, false
			}
			children = append(children, keyedDigest{key: k, digest: d})
		}
		return mapOfDigests(children), true
	case []any:
		digests := make([][sha256.Size]byte, len(x))
		for i, child := range x {
			d, ok := treeDigest(child)
			if !ok {
				return [sha256.Size]byte{}, false
			}
			digests[i] = d
		}
		return listOfDigests(digests), true
	}
	return scalarDigest(v)
}

// keyedDigest is one entry of a map: its key and its value's digest.
type keyedDigest struct {
	key    string
	digest [sha256.Size]byte
}

// mapOfDigests is the digest of a map whose entries are children, in any
// order.
func mapOfDigests(children []keyedDigest) [sha256.Size]byte {
	slices.SortFunc(children, func(a, b keyedDigest) int { return cmp.Compare(a.key, b.key) })
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(children)*(sha256.Size+24))
	b = appendLength(append(b, 'm'), len(children))
	for _, c := range children {
		b = append(appendString(b, c.key), c.digest[:]...)
	}
	return sha256.Sum256(b)
}

// listOfDigests is the digest of a list whose items have these digests.
func listOfDigests(items [][sha256.Size]byte) [sha256.Size]byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(items)*sha256.Size)
	b = appendLength(append(b, 'l'), len(items))
	for _, d := range items {
		b = append(b, d[:]...)
	}
	return sha256.Sum256(b)
}

// scalarDigest is the digest of a value that is neither a map nor a list.
// Values of the types JSON decodes into are written directly; any other
// goes as its type's name and its JSON.
func scalarDigest(v any) ([sha256.Size]byte, bool) {
	var scratch [64]byte
	b := scratch[:0]
	switch x := v.(type) {
	case nil:
		b = append(b, 'z')
	case string:
		if len(x) > len(scratch)-1-binary.MaxVarintLen64 {
			b = make([]byte, 0, 1+binary.MaxVarintLen64+len(x))
		}
		b = appendString(append(b, 's'), x)
	case bool:
		b = appendSet(append(b, 'b'), x)
	case int64:
		b = binary.AppendVarint(append(b, 'i'), x)
	case float64:
		b = binary.BigEndian.AppendUint64(append(b, 'f'), math.Float64bits(x))
	default:
		data, err := json.Marshal(v)
		if err != nil {
			return [sha256.Size]byte{}, false
		}
		b = append(appendString(append(b, 'j'), reflect.TypeOf(v).String()), data...)
	}
	return sha256.Sum256(b), true
}
