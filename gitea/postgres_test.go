package gitea_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/profilekit/profilekit/gitea"
)

// TestLogsIn tries logins on the real server. A wrong password, a database
// that is not there and one the role may not open are refusals (false); a
// server that refuses for another reason (the role's connection limit) is
// an error, not a refusal: a refusal would let a pass take the password
// for one that does not open the role.
func TestLogsIn(t *testing.T) {
	t.Parallel()
	c := gitea.Connector{DSN: pg.AdminDSN(), SSLMode: gitea.SSLVerifyFull, CA: pg.CA}
	role, closed, limited := "logsin_"+rand.String(6), "logsin_closed_"+rand.String(6), "logsin_limited_"+rand.String(6)
	sqlExec(t,
		"CREATE ROLE "+role+" LOGIN PASSWORD 'right'",
		"CREATE DATABASE "+closed,
		"REVOKE CONNECT ON DATABASE "+closed+" FROM PUBLIC",
		"CREATE ROLE "+limited+" LOGIN PASSWORD 'right' CONNECTION LIMIT 0",
	)
	t.Cleanup(func() { sqlExec(t, "DROP DATABASE "+closed, "DROP ROLE "+role, "DROP ROLE "+limited) })

	tests := []struct {
		reason   string
		role     string
		password string
		database string
		want     bool
		wantErr  bool
	}{
		{reason: "a role without a database of its own logs in to the administrator's", role: role, password: "right", want: true},
		{reason: "a wrong password is refused", role: role, password: "wrong"},
		{reason: "a database that is not there is refused", role: role, password: "right", database: "logsin_missing"},
		{reason: "a database the role may not open is refused", role: role, password: "right", database: closed},
		{reason: "the administrator's database, named, is opened", role: role, password: "right", database: "postgres", want: true},
		{reason: "a role at its connection limit is an error, not a refusal", role: limited, password: "right", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := c.LogsIn(t.Context(), tc.role, tc.password, tc.database)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("LogsIn(%s, %s, %q) = %v, %v; want %v, error %v", tc.role, tc.password, tc.database, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
