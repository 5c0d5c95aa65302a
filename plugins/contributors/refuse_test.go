package contributors_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/contributors"
	"github.com/profilekit/profilekit/plugins/internal/access"
)

func user(name, role string) contributors.Contributor {
	return contributors.Contributor{Kind: "User", Name: name, Role: role}
}

// TestBuildRefusesOnlyTheBadEntry: each refused entry is one line of the
// error, naming its index, kind, name and why; the others are granted.
func TestBuildRefusesOnlyTheBadEntry(t *testing.T) {
	ok := user("ok@example.org", "edit")
	const okName = "user-ok-example-org-clusterrole-edit"
	const at = "spec.plugins[1] (contributors).spec.contributors"
	tests := []struct {
		reason      string
		config      func(*contributors.Config)
		entries     []contributors.Contributor
		wantGranted []string
		// wantLines are the error's lines, each as a prefix and a part of
		// its reason.
		wantLines [][2]string
	}{{
		reason:      "admin is off by default",
		entries:     []contributors.Contributor{ok, user("boss@example.org", "admin")},
		wantGranted: []string{okName},
		wantLines:   [][2]string{{at + `[1] (User "boss@example.org", role "admin")`, "role admin is not among the roles the host allows (edit, view)"}},
	}, {
		reason:      "a role the host took away",
		config:      func(c *contributors.Config) { c.Roles = []string{"view"} },
		entries:     []contributors.Contributor{user("ok@example.org", "view"), user("bob@example.org", "edit")},
		wantGranted: []string{"user-ok-example-org-clusterrole-view"},
		wantLines:   [][2]string{{at + `[1] (User "bob@example.org", role "edit")`, "role edit is not among the roles the host allows (view)"}},
	}, {
		reason:      "a role KFAM does not know",
		entries:     []contributors.Contributor{{Kind: "User", Name: "bob@example.org", Role: "cluster-admin"}, ok},
		wantGranted: []string{okName},
		wantLines:   [][2]string{{at + `[0] (User "bob@example.org", role "cluster-admin")`, `role "cluster-admin" is not admin, edit or view`}},
	}, {
		reason:      "service accounts are off by default",
		entries:     []contributors.Contributor{ok, {Kind: "ServiceAccount", Name: "runner", Role: "edit"}},
		wantGranted: []string{okName},
		wantLines:   [][2]string{{at + `[1] (ServiceAccount "runner", role "edit")`, "kind ServiceAccount is not among the kinds the host allows (User, Group)"}},
	}, {
		reason:      "a kind RBAC does not know",
		entries:     []contributors.Contributor{{Kind: "user", Name: "bob@example.org", Role: "edit"}, ok},
		wantGranted: []string{okName},
		wantLines:   [][2]string{{at + `[0] (user "bob@example.org", role "edit")`, `kind "user" is not User, Group or ServiceAccount`}},
	}, {
		reason: "a user name Istio would read as a wildcard, at either end, or alone",
		entries: []contributors.Contributor{
			user("*", "view"), user("*@example.org", "view"), user("bob*", "view"), ok,
		},
		wantGranted: []string{okName},
		wantLines: [][2]string{
			{at + `[0] (User "*", role "view")`, "wildcard"},
			{at + `[1] (User "*@example.org", role "view")`, "wildcard"},
			{at + `[2] (User "bob*", role "view")`, "wildcard"},
		},
	}, {
		reason:      "a user name Istio would read as a wildcard, under a user-id prefix that hides it",
		config:      func(c *contributors.Config) { c.UserIDPrefix = "accounts.google.com:" },
		entries:     []contributors.Contributor{user("*@example.org", "view"), ok},
		wantGranted: []string{okName},
		wantLines:   [][2]string{{at + `[0] (User "*@example.org", role "view")`, "wildcard"}},
	}, {
		reason:      "a group name with a wildcard, or holding the groups header's separator",
		config:      func(c *contributors.Config) { c.Groups = access.Groups{Header: "kubeflow-groups"} },
		entries:     []contributors.Contributor{ok, {Kind: "Group", Name: "team-*", Role: "view"}, {Kind: "Group", Name: "a,b", Role: "view"}},
		wantGranted: []string{okName},
		wantLines: [][2]string{
			{at + `[1] (Group "team-*", role "view")`, "wildcard"},
			{at + `[2] (Group "a,b", role "view")`, "separator"},
		},
	}, {
		reason:      "a user outside the host's domains; a subdomain pattern admits its subdomains only",
		config:      func(c *contributors.Config) { c.UserDomains = []string{"*@example.org", "*@*.example.net"} },
		entries:     []contributors.Contributor{ok, user("eve@evil.org", "view"), user("carol@lab.example.net", "view"), user("dan@example.net", "view"), user("x@y@example.org", "view")},
		wantGranted: []string{"user-carol-lab-example-net-clusterrole-view", okName},
		wantLines: [][2]string{
			{at + `[1] (User "eve@evil.org", role "view")`, "matches none of the host's user domains (*@example.org, *@*.example.net)"},
			{at + `[3] (User "dan@example.net", role "view")`, "matches none of the host's user domains"},
			{at + `[4] (User "x@y@example.org", role "view")`, "matches none of the host's user domains"},
		},
	}, {
		reason:      "entries past the maximum, whatever they are",
		config:      func(c *contributors.Config) { c.MaxContributors = 2 },
		entries:     []contributors.Contributor{ok, user("bob@example.org", "view"), user("carol@example.org", "view"), user("*", "admin")},
		wantGranted: []string{"user-bob-example-org-clusterrole-view", okName},
		wantLines: [][2]string{
			{at + `[2] (User "carol@example.org", role "view")`, "the host allows at most 2 contributors"},
			{at + `[3] (User "*", role "admin")`, "the host allows at most 2 contributors"},
		},
	}, {
		reason:      "two people whose binding names meet: neither is granted, whichever comes first",
		entries:     []contributors.Contributor{user("alice.b@example.org", "edit"), ok, user("alice-b@example.org", "edit"), user("Alice.B@example.org", "edit")},
		wantGranted: []string{okName},
		wantLines: [][2]string{
			{at + `[0] (User "alice.b@example.org", role "edit")`, "user-alice-b-example-org-clusterrole-edit is also that of " + at + "[2], " + at + "[3]"},
			{at + `[2] (User "alice-b@example.org", role "edit")`, "is also that of " + at + "[0], " + at + "[3]"},
			{at + `[3] (User "Alice.B@example.org", role "edit")`, "is also that of " + at + "[0], " + at + "[2]"},
		},
	}, {
		reason:      "service accounts of one name in two namespaces meet too",
		config:      func(c *contributors.Config) { c.Kinds = []string{"ServiceAccount"} },
		entries:     []contributors.Contributor{{Kind: "ServiceAccount", Name: "ci", Role: "view"}, {Kind: "ServiceAccount", Name: "ci", Namespace: "other", Role: "view"}},
		wantGranted: nil,
		wantLines: [][2]string{
			{at + `[0] (ServiceAccount "ci", role "view")`, "is also that of"},
			{at + `[1] (ServiceAccount "ci" in namespace "other", role "view")`, "is also that of"},
		},
	}, {
		reason:      "an entry repeated is granted once; the repeat is refused",
		entries:     []contributors.Contributor{ok, user("bob@example.org", "view"), ok},
		wantGranted: []string{"user-bob-example-org-clusterrole-view", okName},
		wantLines:   [][2]string{{at + `[2] (User "ok@example.org", role "edit")`, "the same as " + at + "[0]"}},
	}, {
		reason: "fields a kind cannot have, and names Kubernetes refuses",
		config: func(c *contributors.Config) { c.Kinds = []string{"User", "ServiceAccount"} },
		entries: []contributors.Contributor{
			{Kind: "User", Name: "bob@example.org", Namespace: "team-b", Role: "edit"},
			{Kind: "ServiceAccount", Name: "Runner_1", Role: "edit"},
			{Kind: "ServiceAccount", Name: "runner", Namespace: "Team.B", Role: "edit"},
			user(" bob@example.org", "edit"),
			user("", "edit"),
			user(strings.Repeat("a", 250)+"@example.org", "edit"),
			ok,
		},
		wantGranted: []string{okName},
		wantLines: [][2]string{
			{at + `[0] (User "bob@example.org" in namespace "team-b", role "edit")`, "only a ServiceAccount has a namespace"},
			{at + `[1] (ServiceAccount "Runner_1", role "edit")`, `service account name "Runner_1"`},
			{at + `[2] (ServiceAccount "runner" in namespace "Team.B", role "edit")`, `namespace "Team.B"`},
			{at + `[3] (User " bob@example.org", role "edit")`, "white space at either end"},
			{at + `[4] (User "", role "edit")`, "user name is empty"},
			{at + `[5] (User "` + strings.Repeat("a", 250) + `@example.org", role "edit")`, "must be no more than 253 characters"},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			cfg := baseConfig()
			if tc.config != nil {
				tc.config(cfg)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("config: %v", err)
			}
			cfg.Contributors = tc.entries
			objs, err := contributors.Build(cfg, listing(map[string]any{"contributors": tc.entries}))
			var granted []string
			for _, b := range objs.Bindings {
				granted = append(granted, *b.Name)
			}
			if diff := cmp.Diff(tc.wantGranted, granted); diff != "" {
				t.Errorf("granted bindings (-want +got):\n%s", diff)
			}
			if err == nil {
				t.Fatal("no error")
			}
			if r := plugins.ReasonOf(err, ""); r != plugins.ReasonInvalidSpec || !plugins.IsTerminal(err) {
				t.Errorf("reason %q, terminal %v: want a terminal InvalidSpec", r, plugins.IsTerminal(err))
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.wantLines) {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), len(tc.wantLines), err)
			}
			for i, want := range tc.wantLines {
				if !strings.HasPrefix(lines[i], want[0]+": ") || !strings.Contains(lines[i], want[1]) {
					t.Errorf("line %d:\n\t%s\nwant it to start %q and hold %q", i, lines[i], want[0], want[1])
				}
			}
		})
	}
}
