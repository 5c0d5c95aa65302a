package gitea

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"

	"github.com/profilekit/profilekit/plugins"
)

func TestPlanEnsure(t *testing.T) {
	t.Parallel()
	spec := DatabaseSpec{Role: "gitea_team-a", Database: "gitea_team-a", Profile: "team-a", Proof: "proof of team-a"}
	adopt := spec
	adopt.Adopt = true
	ours := &RoleState{Comment: spec.Proof}
	unmarked := &RoleState{}
	earlier := Proof("unclassified", &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "0ld-team-a-uid"}})
	tests := []struct {
		reason   string
		cat      Catalog
		spec     DatabaseSpec
		want     ensurePlan
		conflict string
	}{
		{reason: "nothing there: role with proof, then database with proof",
			want: ensurePlan{createRole: true, createDatabase: true, markDatabase: true}},
		{reason: "both ours: the host's password is tried, nothing else written",
			cat:  Catalog{Role: ours, Database: &DatabaseState{Owner: spec.Role, Comment: spec.Proof}},
			want: ensurePlan{checkLogin: true}},
		{reason: "ours by the proof of the owner's earlier Profile of the name: stamped for this one",
			cat:  Catalog{Role: &RoleState{Comment: earlier}, Database: &DatabaseState{Owner: spec.Role, Comment: earlier}},
			spec: withEarlier(spec, earlier),
			want: ensurePlan{checkLogin: true, markRole: true, markDatabase: true}},
		{reason: "a stop between CREATE DATABASE and COMMENT: the database of our role is finished",
			cat:  Catalog{Role: ours, Database: &DatabaseState{Owner: spec.Role}},
			want: ensurePlan{checkLogin: true, markDatabase: true}},
		{reason: "an unmarked database of our role that can create databases itself is not claimed",
			cat:      Catalog{Role: &RoleState{Comment: spec.Proof, CreateDB: true}, Database: &DatabaseState{Owner: spec.Role}},
			conflict: "database gitea_team-a exists and was not made by profilekit for profile team-a (owner gitea_team-a, no profilekit comment); left untouched"},
		{reason: "a first-release role (no comment) is a conflict that names adoption: no login is tried, a password from the tenant's namespace proves nothing",
			cat:      Catalog{Role: unmarked, Database: &DatabaseState{Owner: spec.Role}},
			conflict: "role gitea_team-a exists and was not made by profilekit for profile team-a (" + adoptHint + "); left untouched"},
		{reason: "a first-release role and database are taken over with the host's adoption: new password, both marked",
			cat: Catalog{Role: unmarked, Database: &DatabaseState{Owner: spec.Role}}, spec: adopt,
			want: ensurePlan{alterPassword: true, markRole: true, markDatabase: true}},
		{reason: "another Profile's proof is a conflict",
			cat:      Catalog{Role: &RoleState{Comment: "proof of an earlier team-a"}},
			conflict: `(its comment is "proof of an earlier team-a")`},
		{reason: "an earlier Profile's proof of the name is a conflict that shows nothing of it",
			cat:      Catalog{Role: &RoleState{Comment: earlier}},
			conflict: "role gitea_team-a exists and was not made by profilekit for profile team-a (" + otherProof + "); left untouched"},
		{reason: "adoption never takes what profilekit made for an earlier Profile of the name",
			cat: Catalog{Role: &RoleState{Comment: earlier}, Database: &DatabaseState{Owner: spec.Role, Comment: earlier}}, spec: adopt,
			conflict: "database gitea_team-a exists and was not made by profilekit for profile team-a (owner gitea_team-a; " + otherProof + ")"},
		{reason: "a SUPERUSER role is a conflict",
			cat:      Catalog{Role: &RoleState{Privileged: []string{"SUPERUSER"}}},
			conflict: "role gitea_team-a exists and was not made by profilekit for profile team-a (it holds SUPERUSER); left untouched"},
		{reason: "a foreign database blocks the role too: nothing is written",
			cat:      Catalog{Database: &DatabaseState{Owner: "someone"}},
			conflict: "database gitea_team-a exists and was not made by profilekit for profile team-a (owner someone, no profilekit comment)"},
		{reason: "adoption takes a plain role and a foreign database, and marks both",
			cat: Catalog{Role: &RoleState{Comment: "theirs"}, Database: &DatabaseState{Owner: "someone"}}, spec: adopt,
			want: ensurePlan{alterPassword: true, markRole: true, ownDatabase: true, markDatabase: true}},
		{reason: "adoption never takes a role with CREATEROLE or BYPASSRLS",
			cat: Catalog{Role: &RoleState{Privileged: []string{"CREATEROLE", "BYPASSRLS"}}}, spec: adopt,
			conflict: "(it holds CREATEROLE, BYPASSRLS)"},
		{reason: "adoption never takes a member of other roles",
			cat: Catalog{Role: &RoleState{MemberOf: 1}}, spec: adopt,
			conflict: "it is a member of 1 roles, which adoption refuses"},
		{reason: "a role of ours made SUPERUSER by hand is only tried (Ensure refuses to change its password)",
			cat:  Catalog{Role: &RoleState{Comment: spec.Proof, Privileged: []string{"SUPERUSER"}}},
			want: ensurePlan{checkLogin: true, createDatabase: true, markDatabase: true}},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			s := spec
			if tc.spec.Role != "" {
				s = tc.spec
			}
			got, err := planEnsure(tc.cat, s)
			checkConflict(t, err, tc.conflict)
			if err != nil && strings.Contains(err.Error(), "0ld-team-a-uid") {
				t.Errorf("the message shows an earlier Profile's UID: %v", err)
			}
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(ensurePlan{})); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
}

func TestPlanDrop(t *testing.T) {
	t.Parallel()
	spec := DatabaseSpec{Role: "gitea_team-a", Database: "gitea_team-a", Profile: "team-a", Proof: "proof of team-a"}
	tests := []struct {
		reason   string
		cat      Catalog
		want     dropPlan
		conflict string
	}{
		{reason: "nothing there: nothing to drop"},
		{reason: "both ours: both dropped",
			cat:  Catalog{Role: &RoleState{Comment: spec.Proof}, Database: &DatabaseState{Owner: spec.Role, Comment: spec.Proof}},
			want: dropPlan{role: true, database: true}},
		{reason: "a database someone else made under our name keeps our role too",
			cat:      Catalog{Role: &RoleState{Comment: spec.Proof}, Database: &DatabaseState{Owner: "someone"}},
			conflict: "database gitea_team-a exists and was not made by profilekit for profile team-a"},
		{reason: "a first-release role and database are never dropped: no login is proof",
			cat:      Catalog{Role: &RoleState{}, Database: &DatabaseState{Owner: spec.Role}},
			conflict: "role gitea_team-a exists and was not made by profilekit for profile team-a (" + adoptHint + ")"},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := planDrop(tc.cat, spec)
			checkConflict(t, err, tc.conflict)
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(dropPlan{})); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
}

func withEarlier(spec DatabaseSpec, proofs ...string) DatabaseSpec {
	spec.Earlier = proofs
	return spec
}

func checkConflict(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("error %v, want none", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("error %v, want one holding %q", err, want)
	case want != "" && (plugins.ReasonOf(err, "") != plugins.ReasonConflict || !plugins.IsTerminal(err)):
		t.Errorf("error %v has reason %q, want a terminal %s", err, plugins.ReasonOf(err, ""), plugins.ReasonConflict)
	}
}
