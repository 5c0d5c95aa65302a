package trustpolicy

import (
	"strings"
	"testing"
)

// taggedForeign is a statement someone else wrote, with characters that
// Go's JSON encoder escapes for HTML unless told not to, and with its own
// field order and spacing.
const taggedForeign = `{"Sid": "Ops", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::111122223333:root"}, "Action": "sts:AssumeRole", "Condition": {"StringLike": {"aws:PrincipalTag/team": "r&d <ops>"}}}`

func TestForeignStatementsKeepTheirBytes(t *testing.T) {
	doc := `{"Version":"2012-10-17","Statement":[` + taggedForeign + `]}`
	e := Edit{Provider: provider, Audience: DefaultAudience, Subjects: []string{subA}, Namespace: "team-a"}
	added, changed, err := AddSubjects(doc, e)
	if err != nil || !changed {
		t.Fatalf("AddSubjects = %v, %v; want a change", changed, err)
	}
	if !strings.Contains(added, taggedForeign) {
		t.Errorf("the foreign statement is not kept byte for byte:\n%s", added)
	}
	if strings.Contains(added, `\u00`) {
		t.Errorf("the policy escapes characters it need not, which counts against the size limit:\n%s", added)
	}
	removed, changed, err := RemoveStatement(added, e)
	if err != nil || !changed {
		t.Fatalf("RemoveStatement = %v, %v; want a change", changed, err)
	}
	if want := `{"Version":"2012-10-17","Statement":[` + taggedForeign + `]}`; removed != want {
		t.Errorf("after removing our statement the policy is\n%s\nwant\n%s", removed, want)
	}
}
