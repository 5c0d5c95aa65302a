package trustpolicy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	provider = "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC123"
	issuer   = "oidc.eks.eu-west-1.amazonaws.com/id/ABC123"
	subA     = "system:serviceaccount:team-a:default-editor"
	subB     = "system:serviceaccount:team-b:default-editor"
)

// eksctlPolicy is the trust policy eksctl writes for one service account.
const eksctlPolicy = `{
  "Version": "2012-10-17",
  "Statement": [
    {
      "Effect": "Allow",
      "Principal": {"Federated": "` + provider + `"},
      "Action": "sts:AssumeRoleWithWebIdentity",
      "Condition": {
        "StringEquals": {
          "` + issuer + `:aud": "sts.amazonaws.com",
          "` + issuer + `:sub": "` + subB + `"
        }
      }
    }
  ]
}`

// mixedPolicy has a statement for an EC2 service principal and one for the
// provider with a condition someone else wrote (a session tag), beside the
// provider's plain subject statement.
const mixedPolicy = `{
  "Version": "2012-10-17",
  "Id": "kept-as-is",
  "Statement": [
    {
      "Sid": "Ec2",
      "Effect": "Allow",
      "Principal": {"Service": "ec2.amazonaws.com"},
      "Action": "sts:AssumeRole"
    },
    {
      "Sid": "Tagged",
      "Effect": "Allow",
      "Principal": {"Federated": "` + provider + `"},
      "Action": ["sts:AssumeRoleWithWebIdentity", "sts:TagSession"],
      "Condition": {
        "StringEquals": {"` + issuer + `:sub": "system:serviceaccount:ops:runner"},
        "StringLike": {"aws:RequestTag/team": "ops-*"}
      }
    },
    {
      "Sid": "Profiles",
      "Effect": "Allow",
      "Principal": {"Federated": "` + provider + `"},
      "Action": "sts:AssumeRoleWithWebIdentity",
      "Condition": {
        "StringEquals": {
          "` + issuer + `:aud": ["sts.amazonaws.com"],
          "` + issuer + `:sub": ["` + subB + `", "` + subB + `"]
        }
      }
    }
  ]
}`

// onlyForeign has no statement for the provider that the plugin may extend.
const onlyForeign = `{"Version":"2012-10-17","Statement":{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}}`

// canonical re-encodes a policy so that documents compare regardless of
// white space and key order.
func canonical(t *testing.T, doc string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, doc)
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return string(out)
}

// sidA is the Sid of team-a's statement.
var sidA = StatementID(provider, "team-a")

// ownA is team-a's statement as the plugin writes it.
var ownA = `{"Sid":"` + sidA + `","Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity","Condition":{"StringEquals":{"` + issuer + `:aud":"sts.amazonaws.com","` + issuer + `:sub":"` + subA + `"}}}`

func TestAddSubjects(t *testing.T) {
	edit := Edit{Provider: provider, Audience: DefaultAudience, Subjects: []string{subA}, Namespace: "team-a"}
	tests := []struct {
		reason      string
		doc         string
		edit        Edit
		want        string
		wantChanged bool
		wantErr     string
	}{
		{
			reason:      "a subject gets a statement of ours, never a place in someone else's",
			doc:         eksctlPolicy,
			edit:        edit,
			wantChanged: true,
			want: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity",
				"Condition":{"StringEquals":{"` + issuer + `:aud":"sts.amazonaws.com","` + issuer + `:sub":"` + subB + `"}}},` + ownA + `]}`,
		},
		{
			reason: "a subject someone else's statement already names changes nothing",
			doc:    eksctlPolicy,
			edit:   Edit{Provider: provider, Subjects: []string{subB}, Namespace: "team-b"},
			want:   eksctlPolicy,
		},
		{
			reason:      "foreign statements and conditions are kept; a subject joins our own statement, deduplicated",
			doc:         strings.Replace(mixedPolicy, `"Sid": "Profiles",`, `"Sid": "`+sidA+`",`, 1),
			edit:        Edit{Provider: provider, Subjects: []string{subA, subA}, Namespace: "team-a"},
			wantChanged: true,
			want: `{"Version":"2012-10-17","Id":"kept-as-is","Statement":[
				{"Sid":"Ec2","Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"},
				{"Sid":"Tagged","Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":["sts:AssumeRoleWithWebIdentity","sts:TagSession"],
				 "Condition":{"StringEquals":{"` + issuer + `:sub":"system:serviceaccount:ops:runner"},"StringLike":{"aws:RequestTag/team":"ops-*"}}},
				{"Sid":"` + sidA + `","Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity",
				 "Condition":{"StringEquals":{"` + issuer + `:aud":["sts.amazonaws.com"],"` + issuer + `:sub":["` + subB + `","` + subA + `"]}}}]}`,
		},
		{
			reason:      "a statement of ours that someone bound with another condition is written anew",
			doc:         `{"Statement":[{"Sid":"` + sidA + `","Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity","Condition":{"StringEquals":{"` + issuer + `:sub":"` + subB + `"},"Bool":{"aws:MultiFactorAuthPresent":"true"}}}]}`,
			edit:        edit,
			wantChanged: true,
			want: `{"Statement":[{"Sid":"` + sidA + `","Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity",
				"Condition":{"StringEquals":{"` + issuer + `:aud":"sts.amazonaws.com","` + issuer + `:sub":["` + subB + `","` + subA + `"]}}}]}`,
		},
		{
			reason:      "without a statement of ours a new one is appended",
			doc:         onlyForeign,
			edit:        Edit{Provider: provider, Subjects: []string{subA, subA}, Namespace: "team-a"},
			wantChanged: true,
			want:        `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"},` + ownA + `]}`,
		},
		{
			reason:      "the wildcard form matches with StringLike in the statement all Profiles share",
			doc:         eksctlPolicy,
			edit:        Edit{Provider: provider, Subjects: []string{"system:serviceaccount:*:default-editor"}, Wildcard: true},
			wantChanged: true,
			want: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity",
				"Condition":{"StringEquals":{"` + issuer + `:aud":"sts.amazonaws.com","` + issuer + `:sub":"` + subB + `"}}},
				{"Sid":"` + WildcardStatementID(provider) + `","Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity",
				 "Condition":{"StringEquals":{"` + issuer + `:aud":"sts.amazonaws.com"},"StringLike":{"` + issuer + `:sub":"system:serviceaccount:*:default-editor"}}}]}`,
		},
		{
			reason:      "with adopt, an unmarked statement of our form naming only our subjects gets our Sid",
			doc:         eksctlPolicy,
			edit:        Edit{Provider: provider, Subjects: []string{subB}, Namespace: "team-b", Adopt: true},
			wantChanged: true,
			want: `{"Version":"2012-10-17","Statement":[{"Sid":"` + StatementID(provider, "team-b") + `","Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity",
				"Condition":{"StringEquals":{"` + issuer + `:aud":"sts.amazonaws.com","` + issuer + `:sub":"` + subB + `"}}}]}`,
		},
		{
			reason: "adopt leaves a statement that names another Profile's subject too",
			doc:    mixedPolicy,
			edit:   Edit{Provider: provider, Subjects: []string{"system:serviceaccount:ops:runner"}, Namespace: "ops", Adopt: true},
			want:   mixedPolicy,
		},
		{
			reason:  "a policy past the size limit says by how much",
			doc:     eksctlPolicy,
			edit:    Edit{Provider: provider, Subjects: []string{subA}, Namespace: "team-a", MaxSize: 300},
			wantErr: "trust policy would be 804 characters, 504 over the limit of 300",
		},
		{
			reason:  "a document that is not JSON is an error",
			doc:     `{"Statement": [`,
			edit:    edit,
			wantErr: "trust policy is not a JSON object",
		},
		{
			reason:  "a provider that is not an OIDC provider ARN is an error",
			doc:     eksctlPolicy,
			edit:    Edit{Provider: "oidc.example.org", Subjects: []string{subA}},
			wantErr: `"oidc.example.org" is not an IAM OIDC provider ARN`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got, changed, err := AddSubjects(tt.doc, tt.edit)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if diff := cmp.Diff(canonical(t, tt.want), canonical(t, got)); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
			if has, err := HasSubjects(got, tt.edit); err != nil || !has {
				t.Errorf("HasSubjects after AddSubjects = %v, %v; want true", has, err)
			}
		})
	}
}

func TestSizeErrorIsTyped(t *testing.T) {
	_, _, err := AddSubjects(eksctlPolicy, Edit{Provider: provider, Subjects: []string{subA}, Namespace: "team-a", MaxSize: 100})
	var se *SizeError
	if !errors.As(err, &se) || se.Limit != 100 || se.Size <= 100 {
		t.Errorf("error = %#v, want a *SizeError over 100", err)
	}
}

// The limit is the largest size IAM takes: a policy of exactly that size
// is written, one character more is not.
func TestSizeLimitIsInclusive(t *testing.T) {
	e := Edit{Provider: provider, Subjects: []string{subA}, Namespace: "team-a"}
	out, _, err := AddSubjects(eksctlPolicy, e)
	if err != nil {
		t.Fatal(err)
	}
	e.MaxSize = Size(out)
	if got, changed, err := AddSubjects(eksctlPolicy, e); err != nil || !changed || got != out {
		t.Errorf("at a limit of its size (%d): changed %v, error %v; want the policy written", e.MaxSize, changed, err)
	}
	e.MaxSize--
	var se *SizeError
	if _, _, err := AddSubjects(eksctlPolicy, e); !errors.As(err, &se) || se.Size != e.MaxSize+1 {
		t.Errorf("at a limit one below its size: %v, want a *SizeError of %d", err, e.MaxSize+1)
	}
}

// A namespace's letters and digits stand for themselves in the Sid, the
// first and last of each range too; a dash is Z, anything else X and hex.
func TestStatementIDSpellsTheNamespace(t *testing.T) {
	for ns, want := range map[string]string{"a0-z9": "a0Zz9", "team-b": "teamZb", "A_": "X41X5F", "/": "X2F", ":": "X3A", "{": "X7B", "`": "X60"} {
		if got := StatementID(provider, ns); !strings.HasSuffix(got, "N"+want) {
			t.Errorf("StatementID(%q) = %s, want it to end in N%s", ns, got, want)
		}
	}
}

func TestRemoveStatement(t *testing.T) {
	tests := []struct {
		reason      string
		doc         string
		namespace   string
		want        string
		wantChanged bool
	}{
		{
			reason:      "only our statement leaves; foreign statements, conditions and subjects stay",
			doc:         mustAdd(t, mixedPolicy, "team-a", subA),
			namespace:   "team-a",
			wantChanged: true,
			want:        mixedPolicy,
		},
		{
			reason:    "a subject in someone else's statement stays, even when it is ours",
			doc:       eksctlPolicy,
			namespace: "team-b",
			want:      eksctlPolicy,
		},
		{
			reason:    "another Profile's statement stays",
			doc:       mustAdd(t, onlyForeign, "team-b", subB),
			namespace: "team-a",
			want:      mustAdd(t, onlyForeign, "team-b", subB),
		},
		{
			reason:      "the last statement keeps an empty subject list, which matches no one",
			doc:         `{"Version":"2012-10-17","Statement":[` + ownA + `]}`,
			namespace:   "team-a",
			wantChanged: true,
			want: `{"Version":"2012-10-17","Statement":[{"Sid":"` + sidA + `","Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity",
				"Condition":{"StringEquals":{"` + issuer + `:aud":"sts.amazonaws.com","` + issuer + `:sub":[]}}}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got, changed, err := RemoveStatement(tt.doc, Edit{Provider: provider, Namespace: tt.namespace})
			if err != nil {
				t.Fatal(err)
			}
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if diff := cmp.Diff(canonical(t, tt.want), canonical(t, got)); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
		})
	}
}

func mustAdd(t *testing.T, doc, namespace, sub string) string {
	t.Helper()
	out, _, err := AddSubjects(doc, Edit{Provider: provider, Subjects: []string{sub}, Namespace: namespace})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestProviderFromPolicy(t *testing.T) {
	tests := []struct {
		reason  string
		doc     string
		want    string
		wantErr string
	}{
		{reason: "the provider of the first web identity statement", doc: mixedPolicy, want: provider},
		{reason: "a policy without one says to configure it", doc: onlyForeign, wantErr: "set oidcProvider"},
		{reason: "not JSON", doc: "nope", wantErr: "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got, err := ProviderFromPolicy(tt.doc)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ProviderFromPolicy = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestOthers(t *testing.T) {
	edit := Edit{Provider: provider, Audience: DefaultAudience, Subjects: []string{subB}, Namespace: "team-b"}
	ownB := strings.ReplaceAll(strings.ReplaceAll(ownA, sidA, StatementID(provider, "team-b")), subA, subB)
	tests := []struct {
		reason string
		doc    string
		edit   Edit
		want   []string
	}{
		{reason: "eksctl's statement without a Sid trusts the subject", doc: eksctlPolicy, edit: edit,
			want: []string{"statement #1 trusts " + subB}},
		{reason: "our own statement is not someone else's",
			doc: `{"Version":"2012-10-17","Statement":[` + ownB + `]}`, edit: edit},
		{reason: "another namespace's statement does not name this one's subject",
			doc: `{"Version":"2012-10-17","Statement":[` + ownA + `]}`, edit: edit},
		{reason: "a wildcard edit names no namespace", doc: eksctlPolicy,
			edit: Edit{Provider: provider, Subjects: []string{"system:serviceaccount:*:default-editor"}, Wildcard: true}},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got, err := Others(tt.doc, tt.edit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Others (-want +got):\n%s", diff)
			}
		})
	}
}
