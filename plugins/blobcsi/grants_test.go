package blobcsi

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/google/go-cmp/cmp"
)

func TestVolumeOf(t *testing.T) {
	t.Parallel()
	cases := []struct{ reason, tmpl, ns, claim, want string }{
		{"the default template names the claim after the volume", "{{ .Volume }}", "team-a", "census", "census"},
		{"a prefix and a suffix are taken off", "shared-{{ .Volume }}-{{ .Namespace }}", "team-a", "shared-census-team-a", "census"},
		{"a claim the template does not explain counts as its own volume", "shared-{{ .Volume }}", "team-a", "census", "census"},
		{"a claim that is only the template's text counts as its own volume", "shared-{{ .Volume }}", "team-a", "shared-", "shared-"},
		{"a claim shorter than the template's text, where its prefix and suffix overlap, counts as its own volume", "vol-{{ .Volume }}-vol", "team-a", "vol-vol", "vol-vol"},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			if got := volumeOf(c.tmpl, c.ns, c.claim); got != c.want {
				t.Errorf("volumeOf(%q, %q, %q) = %q, want %q", c.tmpl, c.ns, c.claim, got, c.want)
			}
		})
	}
}

func TestProofOf(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason string
		md     map[string]*string
		want   proof
		ok     bool
	}{{
		reason: "our metadata, as Azure returns it (keys in any case)",
		md:     map[string]*string{"Profilekit_plugin": to.Ptr("blobcsi"), "Profilekit_profile": to.Ptr("team-a"), "Profilekit_profileuid": to.Ptr("uid-1")},
		want:   proof{Profile: "team-a", UID: "uid-1"}, ok: true,
	}, {
		reason: "no metadata is no proof",
	}, {
		reason: "another plugin's key is no proof",
		md:     map[string]*string{"profilekit_plugin": to.Ptr("other"), "profilekit_profileuid": to.Ptr("uid-1")},
	}, {
		reason: "a proof without a UID is no proof",
		md:     map[string]*string{"profilekit_plugin": to.Ptr("blobcsi"), "profilekit_profile": to.Ptr("team-a")},
	}}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			got, ok := proofOf(c.md)
			if ok != c.ok || !cmp.Equal(c.want, got) {
				t.Errorf("proofOf = %+v, %v; want %+v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}
