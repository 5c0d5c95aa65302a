package gitea_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/profilekit/profilekit/gitea"
)

func TestName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", 63)
	victim := strings.Repeat("v", 48) + "-victim-abcd"
	tests := []struct {
		reason string
		prefix string
		ns     string
		want   string
	}{
		{reason: "a short name is prefix and namespace, as in the first release", prefix: "gitea_", ns: "team-a", want: "gitea_team-a"},
		{reason: "exactly 63 bytes is kept whole", prefix: "gitea_", ns: long[:57], want: "gitea_" + long[:57]},
		{reason: "longer than 63 bytes keeps what fits before an _ and 16 hex digits of the namespace's hash", prefix: "gitea_", ns: long,
			want: "gitea_" + strings.Repeat("n", 40) + "_" + hashOf16(long)},
		{reason: "the first release's hashed name of a victim is, as a namespace, a short name of its own", prefix: "gitea_", ns: strings.TrimPrefix(legacyName("gitea_", victim), "gitea_"),
			want: legacyName("gitea_", victim)},
		{reason: "and the victim's own name is hashed apart from it", prefix: "gitea_", ns: victim,
			want: "gitea_" + victim[:40] + "_" + hashOf16(victim)},
		{reason: "what is not a namespace is hashed, its odd characters made dashes", prefix: "gitea_", ns: "A_b",
			want: "gitea_--b_" + hashOf16("A_b")},
		{reason: "the first and last letter and digit, - and . are a namespace's", prefix: "gitea_", ns: "a.z-0-9", want: "gitea_a.z-0-9"},
		{reason: "the bytes beside them are not: hashed, made dashes", prefix: "gitea_", ns: "`{/:a", want: "gitea_----a_" + hashOf16("`{/:a")},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got := gitea.Name(tc.prefix, tc.ns)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Name(%q, %q) (-want +got):\n%s", tc.prefix, tc.ns, d)
			}
			if len(got) > gitea.MaxIdentifier {
				t.Errorf("%d bytes", len(got))
			}
		})
	}
}
