package trustpolicy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// IDPrefix starts the Sid of every statement the plugin writes: the proof,
// kept in the role's own policy, that profilekit wrote the statement.
const IDPrefix = "profilekit"

// StatementID returns the Sid of the statement that trusts the service
// accounts of one Profile (its namespace) through provider:
// profilekit<provider hash>N<namespace>, where the 8 hex digits of the
// provider's SHA-256 keep two clusters that share a role apart, and the
// namespace is spelt in the letters and digits IAM allows in a Sid: a
// lowercase letter or digit stands for itself, Z for a dash, and any other
// byte is X and two uppercase hex digits. Each output letter sequence reads
// back one way only, so two namespaces never share a Sid.
func StatementID(provider, namespace string) string {
	var b strings.Builder
	b.WriteString(IDPrefix)
	b.WriteString(providerHash(provider))
	b.WriteByte('N')
	for i := range len(namespace) {
		c := namespace[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			b.WriteByte(c)
		case c == '-':
			b.WriteByte('Z')
		default:
			fmt.Fprintf(&b, "X%02X", c)
		}
	}
	return b.String()
}

// WildcardStatementID returns the Sid of the statement that holds the
// wildcard form's patterns for provider, shared by every Profile.
func WildcardStatementID(provider string) string {
	return IDPrefix + providerHash(provider) + "All"
}

func providerHash(provider string) string {
	sum := sha256.Sum256([]byte(provider))
	return hex.EncodeToString(sum[:4])
}
