package gitea_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/profilekit/profilekit/gitea"
)

func TestName(t *testing.T) {
	long := strings.Repeat("n", 63)
	tests := []struct {
		reason string
		prefix string
		ns     string
		want   string
	}{
		{reason: "a short name is prefix and namespace", prefix: "gitea_", ns: "team-a", want: "gitea_team-a"},
		{reason: "exactly 63 bytes is kept whole", prefix: "", ns: long, want: long},
		{reason: "longer than 63 bytes keeps 54 and adds a hash of the whole", prefix: "gitea_", ns: long,
			want: "gitea_" + strings.Repeat("n", 48) + "-" + hashOf("gitea_"+long)},
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
	a := gitea.Name("gitea_", strings.Repeat("x", 60)+"one")
	b := gitea.Name("gitea_", strings.Repeat("x", 60)+"two")
	if a == b {
		t.Errorf("two namespaces sharing 60 characters share the name %q", a)
	}
}
