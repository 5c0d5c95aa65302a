package reconcilers

// This file holds the digests by which the held sets know the metadata
// values that cached objects share. Every cached object's labels,
// annotations, owner references and managed fields are looked up at each
// of its events, so their fields are written straight into the hashed bytes
// rather than encoded as JSON first, which took most of the transform's
// time.

import (
	"crypto/sha256"
	"encoding/binary"
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
