package blobcsi

import "testing"

// PlayEarlierVersion lets hosts started until the test ends name volumes
// {{ .Namespace }}-{{ .Volume }}, as versions before DefaultPVName did.
func PlayEarlierVersion(t *testing.T) {
	playEarlierVersion = true
	t.Cleanup(func() { playEarlierVersion = false })
}

// DeleteOwned is deleteOwned, for the test of a delete that conflicts.
var DeleteOwned = deleteOwned
