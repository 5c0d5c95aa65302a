package diff

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUnified(t *testing.T) {
	for _, tc := range []struct {
		reason string
		a, b   string
		want   string
	}{{
		reason: "the same lines make no hunk",
		a:      "a\nb", b: "a\nb",
		want: "",
	}, {
		reason: "a create is one hunk of added lines",
		a:      "", b: "a\nb",
		want: "@@ -0,0 +1,2 @@\n+a\n+b",
	}, {
		reason: "a delete is one hunk of removed lines",
		a:      "a\nb", b: "",
		want: "@@ -1,2 +0,0 @@\n-a\n-b",
	}, {
		reason: "a change keeps up to three lines of context on each side",
		a:      "1\n2\n3\n4\n5\n6\n7\n8", b: "1\n2\n3\n4\nfive\n6\n7\n8",
		want: "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8",
	}, {
		reason: "changes more than six lines apart make two hunks",
		a:      "1\n2\n3\n4\n5\n6\n7\n8\n9\n10", b: "one\n2\n3\n4\n5\n6\n7\n8\n9\nten",
		want: "@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4\n@@ -7,4 +7,4 @@\n 7\n 8\n 9\n-10\n+ten",
	}, {
		reason: "changes up to six lines apart share a hunk",
		a:      "1\n2\n3\n4\n5\n6\n7\n8", b: "one\n2\n3\n4\n5\n6\n7\neight",
		want: "@@ -1,8 +1,8 @@\n-1\n+one\n 2\n 3\n 4\n 5\n 6\n 7\n-8\n+eight",
	}} {
		t.Run(tc.reason, func(t *testing.T) {
			got := strings.Join(unified(lines(tc.a), lines(tc.b), 3), "\n")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
