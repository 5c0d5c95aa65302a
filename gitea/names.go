package gitea

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
)

// MaxIdentifier is PostgreSQL's limit on a name, in bytes.
const MaxIdentifier = 63

// MaxNamePrefix is the longest namePrefix, in bytes: a hashed name keeps at
// least 14 characters of its namespace.
const MaxNamePrefix = 32

// hashDigits is how many hex digits of SHA-256 end a hashed name: 64 bits,
// beyond the reach of a search for a second namespace with the same digits.
const hashDigits = 16

// hashMark separates a hashed name's namespace part from its digits. No
// namespace or Profile name holds it, so no short name holds it after the
// prefix, and every hashed name does.
const hashMark = '_'

// namePrefixRE is the namePrefix rule: a lower-case letter, then lower-case
// letters, digits, _ or -, and a final _ that no namespace can hold, so
// that a name shows where the prefix ends.
var namePrefixRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*_$`)

// Name returns the role and database name for namespace ns: prefix + ns
// when that fits in 63 bytes, else prefix, as much of ns as fits, an _ and
// 16 hex digits of ns's SHA-256.
//
// For one prefix no two namespaces share a name. A namespace never holds
// an _, so after the prefix a short name holds none and a hashed name
// exactly one: short and hashed names never meet; two short names differ
// where their namespaces do; two hashed names are equal only when 64 bits
// of SHA-256 are. Names of two prefixes of which neither starts the other
// differ within the prefixes. Input that is not a namespace (anything but
// a-z, 0-9, - and ., or empty) is always hashed, its characters outside
// those replaced by - in the kept part.
func Name(prefix, ns string) string {
	if ns != "" && len(prefix)+len(ns) <= MaxIdentifier && plainName(ns) {
		return prefix + ns
	}
	sum := sha256.Sum256([]byte(ns))
	keep := max(0, min(len(ns), MaxIdentifier-len(prefix)-1-hashDigits))
	head := []byte(ns[:keep])
	for i, c := range head {
		if !nameByte(c) {
			head[i] = '-'
		}
	}
	return prefix + string(head) + string(hashMark) + hex.EncodeToString(sum[:hashDigits/2])
}

// plainName reports whether s holds only the bytes of a Kubernetes name.
func plainName(s string) bool {
	for i := range len(s) {
		if !nameByte(s[i]) {
			return false
		}
	}
	return true
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.'
}
