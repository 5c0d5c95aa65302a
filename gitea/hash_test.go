package gitea_test

import (
	"crypto/sha256"
	"encoding/hex"
)

// hashOf is the first release's 8 hex digits of a name's SHA-256.
func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

// hashOf16 is 16 hex digits of a namespace's SHA-256, as hashed names end.
func hashOf16(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
