package apps_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/profilekit/profilekit/plugins/apps"
)

func TestApplicationName(t *testing.T) {
	long := strings.Repeat("n", 63)
	tests := []struct {
		reason  string
		ns, app string
		want    string
	}{
		{reason: "namespace and app split by a dot, which neither holds", ns: "team-a", app: "s3-browser", want: "team-a.s3-browser"},
		{reason: "a namespace ending like another's app gets its own name", ns: "a-b", app: "c", want: "a-b.c"},
		{reason: "and so does the other", ns: "a", app: "b-c", want: "a.b-c"},
		{reason: "longer than 63 bytes: 23 bytes of the namespace, what fits of the app, and 16 hex digits", ns: long, app: "gitea-unclassified",
			want: strings.Repeat("n", 23) + ".gitea-unclassified." + hash16(long+".gitea-unclassified")},
		{reason: "the first and last letters and digits are a label's", ns: "a-z", app: "0-9", want: "a-z.0-9"},
		{reason: "exactly 63 bytes is not hashed", ns: strings.Repeat("n", 31), app: strings.Repeat("a", 31),
			want: strings.Repeat("n", 31) + "." + strings.Repeat("a", 31)},
		{reason: "a long namespace and a long app: 23 bytes and the 22 that fit", ns: long, app: strings.Repeat("a", 63),
			want: strings.Repeat("n", 23) + "." + strings.Repeat("a", 22) + "." + hash16(long+"."+strings.Repeat("a", 63))},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got := apps.ApplicationName(tc.ns, tc.app)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("ApplicationName(%q, %q) (-want +got):\n%s", tc.ns, tc.app, d)
			}
			checkName(t, got)
		})
	}
	if a, b := apps.LegacyApplicationName("a-b", "c"), apps.LegacyApplicationName("a", "b-c"); a != b {
		t.Errorf("the first release's names %q and %q differ; this test shows nothing", a, b)
	}
	if got, want := apps.LegacyApplicationName(strings.Repeat("n", 31), strings.Repeat("a", 31)), strings.Repeat("n", 31)+"-"+strings.Repeat("a", 31); got != want {
		t.Errorf("the first release's name of a pair of 63 bytes is %q, want the pair itself", got)
	}
	if got, want := apps.LegacyApplicationName(long, "app"), strings.Repeat("n", 54)+"-"+hash16(long + "-app")[:8]; got != want {
		t.Errorf("the first release's name of a long pair is %q, want %q", got, want)
	}
}

func hash16(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

func checkName(t *testing.T, name string) {
	t.Helper()
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		t.Errorf("%q is no object name: %v", name, msgs)
	}
	if msgs := validation.IsValidLabelValue(name); len(msgs) > 0 {
		t.Errorf("%q is no label value: %v", name, msgs)
	}
}

// labelOf maps any bytes to a DNS-1123 label of at most limit characters.
func labelOf(b []byte, limit int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-"
	if len(b) == 0 {
		return "a"
	}
	if len(b) > limit {
		b = b[:limit]
	}
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = alphabet[int(c)%len(alphabet)]
	}
	if out[0] == '-' {
		out[0] = 'a'
	}
	if out[len(out)-1] == '-' {
		out[len(out)-1] = 'z'
	}
	return string(out)
}

// FuzzApplicationName checks that no two (namespace, app) pairs share an
// Application name, short or hashed, that no name is one the first release
// gave any pair, and that every name is an object name and a label value.
func FuzzApplicationName(f *testing.F) {
	f.Add([]byte("a-b"), []byte("c"), []byte("a"), []byte("b-c"))
	f.Add([]byte("team-a"), []byte("gitea-unclassified"), []byte("team-a-gitea"), []byte("unclassified"))
	f.Add([]byte(strings.Repeat("x", 44)), []byte("gitea-unclassified"), []byte(strings.Repeat("x", 45)), []byte("gitea-unclassified"))
	f.Add([]byte(strings.Repeat("y", 63)), []byte("app-one"), []byte(strings.Repeat("y", 63)), []byte("app-two"))
	f.Add([]byte(strings.Repeat("z", 23)), []byte("a"), []byte(strings.Repeat("z", 23)+".a"), []byte("b"))
	f.Fuzz(func(t *testing.T, ns1, app1, ns2, app2 []byte) {
		a := [2]string{labelOf(ns1, validation.DNS1123LabelMaxLength), labelOf(app1, validation.DNS1123LabelMaxLength)}
		b := [2]string{labelOf(ns2, validation.DNS1123LabelMaxLength), labelOf(app2, validation.DNS1123LabelMaxLength)}
		x, y := apps.ApplicationName(a[0], a[1]), apps.ApplicationName(b[0], b[1])
		checkName(t, x)
		if x == y && a != b {
			t.Fatalf("ApplicationName%q = ApplicationName%q = %q", a, b, x)
		}
		if x == apps.LegacyApplicationName(b[0], b[1]) {
			t.Fatalf("ApplicationName%q = the first release's name of %q, %q", a, b, x)
		}
	})
}
