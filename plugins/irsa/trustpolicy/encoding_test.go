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

// The document's own fields keep their order, whichever comes first, and a
// field written twice counts once, with its last value, as encoding/json
// reads it.
func TestDocumentFieldsKeepTheirOrder(t *testing.T) {
	e := Edit{Provider: provider, Audience: DefaultAudience, Subjects: []string{subA}, Namespace: "team-a"}
	for _, c := range []struct{ reason, doc, wantStart string }{
		{"the statements first", `{"Statement":[` + taggedForeign + `],"Version":"2012-10-17"}`, `{"Statement":[` + taggedForeign + `,{`},
		{"the version twice, first", `{"Version":"2008-10-17","Version":"2012-10-17","Statement":[` + taggedForeign + `]}`, `{"Version":"2012-10-17","Statement":[` + taggedForeign + `,{`},
	} {
		t.Run(c.reason, func(t *testing.T) {
			added, changed, err := AddSubjects(c.doc, e)
			if err != nil || !changed {
				t.Fatalf("AddSubjects = %v, %v; want a change", changed, err)
			}
			if !strings.HasPrefix(added, c.wantStart) || strings.Count(added, `"Statement"`) != 1 || strings.Count(added, `"Version"`) != 1 {
				t.Errorf("AddSubjects wrote\n%s\nwant it to start %s, with one Statement and one Version", added, c.wantStart)
			}
		})
	}
}

// A statement claimed with Adopt gains our Sid and nothing else changes: its
// condition keeps its bytes, key order and spacing.
func TestAdoptedStatementKeepsItsCondition(t *testing.T) {
	condition := `{"StringEquals": {"` + issuer + `:sub": "` + subB + `", "` + issuer + `:aud": "sts.amazonaws.com"}}`
	doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity","Condition": ` + condition + `}]}`
	e := Edit{Provider: provider, Subjects: []string{subB}, Namespace: "team-b", Adopt: true}
	added, changed, err := AddSubjects(doc, e)
	if err != nil || !changed {
		t.Fatalf("AddSubjects = %v, %v; want a change", changed, err)
	}
	if !strings.Contains(added, `"Sid":"`+StatementID(provider, "team-b")+`"`) || !strings.Contains(added, condition) {
		t.Errorf("the adopted statement is\n%s\nwant our Sid and the condition as it was: %s", added, condition)
	}
}
