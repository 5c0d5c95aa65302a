package irsa_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/profilekit/profilekit/internal/testhost"
	"github.com/profilekit/profilekit/plugins/irsa"
)

// TestNameDoesNotChangeHands: with the allowance a platform gives each team
// (a role templated on the namespace), alice's team role never trusts the
// namespace of mallory, who registers the name after alice's Profile is
// deleted, unless an administrator releases the name.
func TestNameDoesNotChangeHands(t *testing.T) {
	name := "irsa-tenure-" + rand.String(5)
	own := "kf-" + name
	store := &roles{docs: map[string]string{own: startPolicy}}
	defaults := `{"oidcProvider":"` + provider + `","allowedIdentities":[{"identity":"arn:aws:iam::111122223333:role/kf-{{ .Namespace }}"}]}`
	subject := "system:serviceaccount:" + name + ":default-editor"
	testhost.HandOver{
		Client: env.Client, Name: name, Kind: irsa.Kind, CondType: condType,
		Entry: entry(`{"awsIamRole":"arn:aws:iam::111122223333:role/` + own + `"}`),
		Start: func(t *testing.T) { identityHost(t, store, defaults) },
		Granted: func(*testing.T) (bool, string) {
			doc := store.doc(own)
			return strings.Contains(doc, subject), doc
		},
	}.Run(t)
}
