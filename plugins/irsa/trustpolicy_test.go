package irsa

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

func TestAddSubjects(t *testing.T) {
	edit := TrustEdit{Provider: provider, Audience: DefaultAudience, Subjects: []string{subA}}
	tests := []struct {
		reason      string
		doc         string
		edit        TrustEdit
		want        string
		wantChanged bool
		wantErr     string
	}{
		{
			reason:      "a subject joins the provider's subject list, as a list",
			doc:         eksctlPolicy,
			edit:        edit,
			wantChanged: true,
			want: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity",
				"Condition":{"StringEquals":{"` + issuer + `:aud":"sts.amazonaws.com","` + issuer + `:sub":["` + subB + `","` + subA + `"]}}}]}`,
		},
		{
			reason: "a subject already there changes nothing",
			doc:    eksctlPolicy,
			edit:   TrustEdit{Provider: provider, Subjects: []string{subB}},
			want:   eksctlPolicy,
		},
		{
			reason:      "foreign statements and conditions are kept; the plain statement gets the subject, deduplicated",
			doc:         mixedPolicy,
			edit:        edit,
			wantChanged: true,
			want: `{"Version":"2012-10-17","Id":"kept-as-is","Statement":[
				{"Sid":"Ec2","Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"},
				{"Sid":"Tagged","Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":["sts:AssumeRoleWithWebIdentity","sts:TagSession"],
				 "Condition":{"StringEquals":{"` + issuer + `:sub":"system:serviceaccount:ops:runner"},"StringLike":{"aws:RequestTag/team":"ops-*"}}},
				{"Sid":"Profiles","Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity",
				 "Condition":{"StringEquals":{"` + issuer + `:aud":["sts.amazonaws.com"],"` + issuer + `:sub":["` + subB + `","` + subA + `"]}}}]}`,
		},
		{
			reason:      "without a plain statement for the provider a new one is appended",
			doc:         onlyForeign,
			edit:        TrustEdit{Provider: provider, Subjects: []string{subA, subA}},
			wantChanged: true,
			want: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"},
				{"Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity",
				 "Condition":{"StringEquals":{"` + issuer + `:aud":"sts.amazonaws.com","` + issuer + `:sub":"` + subA + `"}}}]}`,
		},
		{
			reason:      "the wildcard form matches with StringLike in a statement of its own",
			doc:         eksctlPolicy,
			edit:        TrustEdit{Provider: provider, Subjects: []string{"system:serviceaccount:*:default-editor"}, Wildcard: true},
			wantChanged: true,
			want: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity",
				"Condition":{"StringEquals":{"` + issuer + `:aud":"sts.amazonaws.com","` + issuer + `:sub":"` + subB + `"}}},
				{"Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity",
				 "Condition":{"StringEquals":{"` + issuer + `:aud":"sts.amazonaws.com"},"StringLike":{"` + issuer + `:sub":"system:serviceaccount:*:default-editor"}}}]}`,
		},
		{
			reason:  "a policy past the size limit says by how much",
			doc:     eksctlPolicy,
			edit:    TrustEdit{Provider: provider, Subjects: []string{subA}, MaxSize: 300},
			wantErr: "trust policy would be 452 characters, 152 over the limit of 300",
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
			edit:    TrustEdit{Provider: "oidc.example.org", Subjects: []string{subA}},
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
	_, _, err := AddSubjects(eksctlPolicy, TrustEdit{Provider: provider, Subjects: []string{subA}, MaxSize: 100})
	var se *SizeError
	if !errors.As(err, &se) || se.Limit != 100 || se.Size <= 100 {
		t.Errorf("error = %#v, want a *SizeError over 100", err)
	}
}

func TestRemoveSubjects(t *testing.T) {
	tests := []struct {
		reason      string
		doc         string
		subjects    []string
		want        string
		wantChanged bool
	}{
		{
			reason:      "only our subject leaves; foreign statements, conditions and subjects stay",
			doc:         mustAdd(t, mixedPolicy, subA),
			subjects:    []string{subA},
			wantChanged: true,
			want: `{"Version":"2012-10-17","Id":"kept-as-is","Statement":[
				{"Sid":"Ec2","Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"},
				{"Sid":"Tagged","Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":["sts:AssumeRoleWithWebIdentity","sts:TagSession"],
				 "Condition":{"StringEquals":{"` + issuer + `:sub":"system:serviceaccount:ops:runner"},"StringLike":{"aws:RequestTag/team":"ops-*"}}},
				{"Sid":"Profiles","Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity",
				 "Condition":{"StringEquals":{"` + issuer + `:aud":["sts.amazonaws.com"],"` + issuer + `:sub":"` + subB + `"}}}]}`,
		},
		{
			reason:   "a subject that is not there changes nothing",
			doc:      eksctlPolicy,
			subjects: []string{subA},
			want:     eksctlPolicy,
		},
		{
			reason:      "a statement left without subjects is dropped, never left trusting every service account",
			doc:         mustAdd(t, onlyForeign, subA),
			subjects:    []string{subA},
			wantChanged: true,
			want:        `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}`,
		},
		{
			reason:      "the last statement keeps an empty subject list, which matches no one",
			doc:         eksctlPolicy,
			subjects:    []string{subB},
			wantChanged: true,
			want: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Federated":"` + provider + `"},"Action":"sts:AssumeRoleWithWebIdentity",
				"Condition":{"StringEquals":{"` + issuer + `:aud":"sts.amazonaws.com","` + issuer + `:sub":[]}}}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got, changed, err := RemoveSubjects(tt.doc, TrustEdit{Provider: provider, Subjects: tt.subjects})
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

func mustAdd(t *testing.T, doc, sub string) string {
	t.Helper()
	out, _, err := AddSubjects(doc, TrustEdit{Provider: provider, Subjects: []string{sub}})
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
