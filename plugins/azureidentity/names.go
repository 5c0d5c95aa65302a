package azureidentity

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// CredentialPrefix starts the name of every federated credential the plugin
// makes.
const CredentialPrefix = "profilekit-"

// maxCredentialName is Azure's limit for a federated credential's name.
const maxCredentialName = 120

// CredentialName is the name of the federated credential of one service
// account: profilekit-<namespace>_<name>, each dot of the name an
// underscore. Neither a namespace nor a service account name can hold an
// underscore, so the first one separates them and the others are dots: two
// service accounts never share a name. A name past Azure's 120 characters
// is instead profilekit-, as much of <namespace>-<name> (dots as dashes)
// as fits, a dash and the 64 hex digits of the SHA-256 of
// <namespace>/<name>; it has no underscore, so it never meets a short one.
// Both stay within Azure's rules: letters, digits, dashes and underscores,
// starting with a letter.
func CredentialName(namespace, name string) string {
	short := CredentialPrefix + namespace + "_" + strings.ReplaceAll(name, ".", "_")
	if len(short) <= maxCredentialName {
		return short
	}
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	hash := hex.EncodeToString(sum[:])
	readable := strings.ReplaceAll(namespace+"-"+name, ".", "-")
	if room := maxCredentialName - len(CredentialPrefix) - 1 - len(hash); len(readable) > room {
		readable = readable[:room]
	}
	return CredentialPrefix + readable + "-" + hash
}

// legacyCredentialName is the name versions of the plugin before
// CredentialName's scheme gave the credential of a service account. Revoke
// and Apply still delete a credential of that name that the outside-state
// record holds and whose subject is the service account's.
func legacyCredentialName(namespace, name string) string {
	n := strings.ReplaceAll(CredentialPrefix+namespace+"-"+name, ".", "-")
	if len(n) > maxCredentialName {
		n = n[:maxCredentialName]
	}
	return n
}
