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
		claim    claim
		want     ensurePlan
		conflict string
	}{
		{reason: "nothing there: role with proof, then database with proof",
			claim: claim{password: true}, want: ensurePlan{createRole: true, createDatabase: true, markDatabase: true}},
		{reason: "both ours: nothing to write",
			cat: Catalog{Role: ours, Database: &DatabaseState{Owner: spec.Role, Comment: spec.Proof}}, claim: claim{password: true}},
		{reason: "ours and the Secret lost with rotation: a new password",
			cat: Catalog{Role: ours, Database: &DatabaseState{Owner: spec.Role, Comment: spec.Proof}}, claim: claim{password: true, setPassword: true},
			want: ensurePlan{alterPassword: true}},
		{reason: "a stop between CREATE DATABASE and COMMENT: the database of our role is finished",
			cat: Catalog{Role: ours, Database: &DatabaseState{Owner: spec.Role}}, claim: claim{password: true},
			want: ensurePlan{markDatabase: true}},
		{reason: "an unmarked database of our role that can create databases itself is not claimed",
			cat: Catalog{Role: &RoleState{Comment: spec.Proof, CreateDB: true}, Database: &DatabaseState{Owner: spec.Role}}, claim: claim{password: true},
			conflict: "database gitea_team-a exists and was not made by profilekit for profile team-a (owner gitea_team-a, no profilekit comment); left untouched"},
		{reason: "a first-release role: log in with the Secret's password first",
			cat: Catalog{Role: unmarked, Database: &DatabaseState{Owner: spec.Role}}, claim: claim{password: true},
			want: ensurePlan{checkLogin: true}},
		{reason: "a first-release role the Secret logs in as: both marked, nothing else",
			cat: Catalog{Role: unmarked, Database: &DatabaseState{Owner: spec.Role}}, claim: claim{password: true, loginChecked: true, loggedIn: true},
			want: ensurePlan{markRole: true, markDatabase: true}},
		{reason: "an unmarked role the Secret does not log in as is a conflict",
			cat: Catalog{Role: unmarked}, claim: claim{password: true, loginChecked: true},
			conflict: "role gitea_team-a exists and was not made by profilekit for profile team-a (it has no profilekit comment, and the password in the Profile's Secret does not log in as it); left untouched"},
		{reason: "an unmarked role and no Secret to prove it with is a conflict, not a rotation",
			cat: Catalog{Role: unmarked}, claim: claim{password: true, setPassword: true},
			conflict: "no password of the Profile's Secret to prove it with"},
		{reason: "another Profile's proof is a conflict",
			cat: Catalog{Role: &RoleState{Comment: "proof of an earlier team-a"}}, claim: claim{password: true},
			conflict: `(its comment is "proof of an earlier team-a")`},
		{reason: "an earlier Profile's proof of the name is a conflict that shows nothing of it",
			cat: Catalog{Role: &RoleState{Comment: earlier}}, claim: claim{password: true},
			conflict: "role gitea_team-a exists and was not made by profilekit for profile team-a (" + otherProof + "); left untouched"},
		{reason: "adoption never takes what profilekit made for an earlier Profile of the name",
			cat: Catalog{Role: &RoleState{Comment: earlier}, Database: &DatabaseState{Owner: spec.Role, Comment: earlier}}, spec: adopt, claim: claim{password: true},
			conflict: "database gitea_team-a exists and was not made by profilekit for profile team-a (owner gitea_team-a; " + otherProof + ")"},
		{reason: "a SUPERUSER role is a conflict without trying to log in",
			cat: Catalog{Role: &RoleState{Privileged: []string{"SUPERUSER"}}}, claim: claim{password: true},
			conflict: "role gitea_team-a exists and was not made by profilekit for profile team-a (it holds SUPERUSER); left untouched"},
		{reason: "a foreign database blocks the role too: nothing is written",
			cat: Catalog{Database: &DatabaseState{Owner: "someone"}}, claim: claim{password: true},
			conflict: "database gitea_team-a exists and was not made by profilekit for profile team-a (owner someone, no profilekit comment)"},
		{reason: "adoption takes a plain role and a foreign database, and marks both",
			cat: Catalog{Role: &RoleState{Comment: "theirs"}, Database: &DatabaseState{Owner: "someone"}}, spec: adopt, claim: claim{password: true},
			want: ensurePlan{alterPassword: true, markRole: true, ownDatabase: true, markDatabase: true}},
		{reason: "adoption never takes a role with CREATEROLE or BYPASSRLS",
			cat: Catalog{Role: &RoleState{Privileged: []string{"CREATEROLE", "BYPASSRLS"}}}, spec: adopt, claim: claim{password: true},
			conflict: "(it holds CREATEROLE, BYPASSRLS)"},
		{reason: "adoption never takes a member of other roles",
			cat: Catalog{Role: &RoleState{MemberOf: 1}}, spec: adopt, claim: claim{password: true, setPassword: true},
			conflict: "it is a member of 1 roles, which adoption refuses"},
		{reason: "a role of ours made SUPERUSER by hand keeps its password",
			cat: Catalog{Role: &RoleState{Comment: spec.Proof, Privileged: []string{"SUPERUSER"}}}, claim: claim{password: true, setPassword: true},
			conflict: "role gitea_team-a holds SUPERUSER; its password is not changed"},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			s := spec
			if tc.spec.Role != "" {
				s = tc.spec
			}
			got, err := planEnsure(tc.cat, s, tc.claim)
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
	spec := DatabaseSpec{Role: "gitea_team-a", Database: "gitea_team-a", Profile: "team-a", Proof: "proof of team-a"}
	tests := []struct {
		reason   string
		cat      Catalog
		claim    claim
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
		{reason: "a first-release role and database are dropped once the Secret logs in",
			cat:   Catalog{Role: &RoleState{}, Database: &DatabaseState{Owner: spec.Role}},
			claim: claim{password: true, loginChecked: true, loggedIn: true},
			want:  dropPlan{role: true, database: true}},
		{reason: "a first-release role without a Secret is never dropped",
			cat:      Catalog{Role: &RoleState{}, Database: &DatabaseState{Owner: spec.Role}},
			conflict: "role gitea_team-a exists and was not made by profilekit for profile team-a"},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := planDrop(tc.cat, spec, tc.claim)
			checkConflict(t, err, tc.conflict)
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(dropPlan{})); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
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
