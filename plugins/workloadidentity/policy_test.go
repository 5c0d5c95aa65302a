package workloadidentity

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	iam "google.golang.org/api/iam/v1"
)

const (
	memberA = "serviceAccount:proj-123.svc.id.goog[team-a/default-editor]"
	memberB = "serviceAccount:proj-123.svc.id.goog[team-b/default-editor]"
)

func TestGrantAndRevoke(t *testing.T) {
	cond := &iam.Expr{Expression: `request.time < timestamp("2030-01-01T00:00:00Z")`, Title: "until 2030"}
	tests := []struct {
		reason      string
		in          *iam.Policy
		grant       bool
		members     []string
		want        *iam.Policy
		wantChanged bool
	}{
		{
			reason: "grant to an empty policy adds a binding", in: &iam.Policy{Etag: "e1"}, grant: true, members: []string{memberA}, wantChanged: true,
			want: &iam.Policy{Etag: "e1", Bindings: []*iam.Binding{{Role: RoleWorkloadIdentityUser, Members: []string{memberA}}}},
		},
		{
			reason: "grant joins the existing unconditional binding, once",
			in:     &iam.Policy{Etag: "e1", Bindings: []*iam.Binding{{Role: "roles/iam.serviceAccountTokenCreator", Members: []string{"user:a@example.org"}}, {Role: RoleWorkloadIdentityUser, Members: []string{memberB}}}},
			grant:  true, members: []string{memberA, memberA}, wantChanged: true,
			want: &iam.Policy{Etag: "e1", Bindings: []*iam.Binding{{Role: "roles/iam.serviceAccountTokenCreator", Members: []string{"user:a@example.org"}}, {Role: RoleWorkloadIdentityUser, Members: []string{memberB, memberA}}}},
		},
		{
			reason: "grant joins the existing unconditional binding when it is the first",
			in:     &iam.Policy{Bindings: []*iam.Binding{{Role: RoleWorkloadIdentityUser, Members: []string{memberB}}, {Role: "roles/iam.serviceAccountTokenCreator", Members: []string{"user:a@example.org"}}}},
			grant:  true, members: []string{memberA}, wantChanged: true,
			want: &iam.Policy{Bindings: []*iam.Binding{{Role: RoleWorkloadIdentityUser, Members: []string{memberB, memberA}}, {Role: "roles/iam.serviceAccountTokenCreator", Members: []string{"user:a@example.org"}}}},
		},
		{
			reason: "grant of a member already there changes nothing",
			in:     &iam.Policy{Bindings: []*iam.Binding{{Role: RoleWorkloadIdentityUser, Members: []string{memberA}}}},
			grant:  true, members: []string{memberA},
			want: &iam.Policy{Bindings: []*iam.Binding{{Role: RoleWorkloadIdentityUser, Members: []string{memberA}}}},
		},
		{
			reason: "a conditional binding does not count as a grant and stays as it is",
			in:     &iam.Policy{Version: 3, Bindings: []*iam.Binding{{Role: RoleWorkloadIdentityUser, Members: []string{memberA}, Condition: cond}}},
			grant:  true, members: []string{memberA}, wantChanged: true,
			want: &iam.Policy{Version: 3, Bindings: []*iam.Binding{{Role: RoleWorkloadIdentityUser, Members: []string{memberA}, Condition: cond}, {Role: RoleWorkloadIdentityUser, Members: []string{memberA}}}},
		},
		{
			reason:  "revoke removes only our member",
			in:      &iam.Policy{Bindings: []*iam.Binding{{Role: RoleWorkloadIdentityUser, Members: []string{memberB, memberA}}}},
			members: []string{memberA}, wantChanged: true,
			want: &iam.Policy{Bindings: []*iam.Binding{{Role: RoleWorkloadIdentityUser, Members: []string{memberB}}}},
		},
		{
			reason:  "revoke drops a binding left empty, and keeps conditional ones",
			in:      &iam.Policy{Version: 3, Bindings: []*iam.Binding{{Role: RoleWorkloadIdentityUser, Members: []string{memberA}}, {Role: RoleWorkloadIdentityUser, Members: []string{memberA}, Condition: cond}}},
			members: []string{memberA}, wantChanged: true,
			want: &iam.Policy{Version: 3, Bindings: []*iam.Binding{{Role: RoleWorkloadIdentityUser, Members: []string{memberA}, Condition: cond}}},
		},
		{
			reason:  "revoke of a member not there changes nothing",
			in:      &iam.Policy{Bindings: []*iam.Binding{{Role: RoleWorkloadIdentityUser, Members: []string{memberB}}}},
			members: []string{memberA},
			want:    &iam.Policy{Bindings: []*iam.Binding{{Role: RoleWorkloadIdentityUser, Members: []string{memberB}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			var changed bool
			if tt.grant {
				changed = Grant(tt.in, RoleWorkloadIdentityUser, tt.members)
			} else {
				changed = Revoke(tt.in, RoleWorkloadIdentityUser, tt.members)
			}
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if diff := cmp.Diff(tt.want, tt.in); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProjectAndPool(t *testing.T) {
	tests := []struct {
		reason   string
		cfg      Config
		wantPool string
		wantErr  string
	}{
		{reason: "the pool of the account's project", cfg: Config{GCPServiceAccount: "kf-user@proj-123.iam.gserviceaccount.com"}, wantPool: "proj-123.svc.id.goog"},
		{reason: "a configured pool wins", cfg: Config{GCPServiceAccount: "kf-user@proj-123.iam.gserviceaccount.com", WorkloadPool: "host-proj.svc.id.goog"}, wantPool: "host-proj.svc.id.goog"},
		{reason: "a short value is an error, not a panic", cfg: Config{GCPServiceAccount: "x"}, wantErr: `gcpServiceAccount "x": not a Google service account email`},
		{reason: "an email of another domain", cfg: Config{GCPServiceAccount: "alice@example.org"}, wantErr: `gcpServiceAccount "alice@example.org"`},
		{reason: "the suffix alone", cfg: Config{GCPServiceAccount: ".iam.gserviceaccount.com"}, wantErr: "not a Google service account email"},
		{reason: "no project between @ and the suffix", cfg: Config{GCPServiceAccount: "kf-user@.iam.gserviceaccount.com"}, wantErr: "not a Google service account email"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got, err := tt.cfg.Pool()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				if verr := tt.cfg.Validate(); verr == nil {
					t.Errorf("Validate accepted %q", tt.cfg.GCPServiceAccount)
				}
				return
			}
			if err != nil || got != tt.wantPool {
				t.Errorf("Pool = %q, %v; want %q", got, err, tt.wantPool)
			}
		})
	}
}
