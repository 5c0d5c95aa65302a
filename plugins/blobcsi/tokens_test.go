package blobcsi

import (
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// TestTokenCacheKeepsEachIdentity: a credential is made once per identity,
// however the calls of several identities interleave, and the cache never
// holds more than maxTokenCredentials.
func TestTokenCacheKeepsEachIdentity(t *testing.T) {
	var c tokenCache
	made := 0
	get := func(id string) {
		t.Helper()
		_, err := c.get([]string{id}, func() (azcore.TokenCredential, error) {
			made++
			return azidentity.NewClientSecretCredential("tenant", id, "secret", nil)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		get("a")
		get("b")
	}
	if made != 2 {
		t.Errorf("two identities, three calls each: %d credentials made, want 2", made)
	}
	for i := range maxTokenCredentials + 1 {
		get(fmt.Sprint("rotated-", i))
		if len(c.m) > maxTokenCredentials {
			t.Fatalf("after %d identities the cache holds %d credentials, more than %d", i+3, len(c.m), maxTokenCredentials)
		}
	}
}
