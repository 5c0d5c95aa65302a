package hostconfig_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
)

func TestPageSection(t *testing.T) {
	t.Setenv("USERID_HEADER", "")
	t.Setenv("USERID_PREFIX", "")
	tests := []struct {
		reason  string
		yaml    string
		want    hostconfig.Page
		wantErr []string
	}{
		{
			reason: "off, with its defaults filled in",
			yaml:   "plugins: {quotas: {}}\n",
			want:   hostconfig.Page{Address: ":8082", UserIDHeader: "kubeflow-userid", FrameAncestors: "'self'", AccessEntries: 10000},
		},
		{
			reason: "on, behind a gateway that sets groups and a prefix",
			yaml:   "page: {enabled: true, address: '127.0.0.1:9000', userIdPrefix: 'accounts.google.com:', groupsHeader: kubeflow-groups, accessTTL: 10s}\nplugins: {quotas: {}}\n",
			want: hostconfig.Page{Enabled: true, Address: "127.0.0.1:9000", UserIDHeader: "kubeflow-userid", UserIDPrefix: "accounts.google.com:",
				GroupsHeader: "kubeflow-groups", FrameAncestors: "'self'", AccessTTL: &metav1.Duration{Duration: 10 * time.Second}, AccessEntries: 10000},
		},
		{
			reason: "every problem at once",
			yaml:   "page: {address: '8082', userIdHeader: 'x user', groupsHeader: 'X-User', frameAncestors: \"'self'; script-src *\", accessTTL: 1h, accessEntries: -1}\nplugins: {quotas: {}}\n",
			wantErr: []string{
				`host.yaml: page.address: want host:port such as :8082, got "8082"`,
				`host.yaml: page.userIdHeader: "x user" is not an HTTP header name`,
				`host.yaml: page.frameAncestors: want a source list`,
				"host.yaml: page.accessTTL: want a duration above 0 and at most 5m",
				"host.yaml: page.accessEntries: must not be negative, got -1",
			},
		},
		{reason: "one header for both", yaml: "page: {userIdHeader: a, groupsHeader: A}\nplugins: {quotas: {}}\n", wantErr: []string{`host.yaml: page.groupsHeader: "A" is the user-id header too`}},
		{reason: "an unknown page field", yaml: "page: {enable: true}\nplugins: {quotas: {}}\n", wantErr: []string{"host.yaml: page.enable: unknown field"}},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			cfg, err := hostconfig.Parse("host.yaml", []byte(tt.yaml), registry(t))
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Parse = %+v, want an error", cfg.Page)
				}
				last := -1
				for _, w := range tt.wantErr {
					i := strings.Index(err.Error(), w)
					if i < 0 {
						t.Errorf("error does not contain %q:\n%v", w, err)
					} else if i < last {
						t.Errorf("%q is out of order in:\n%v", w, err)
					}
					last = max(last, i)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, cfg.Page); diff != "" {
				t.Errorf("page (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPageHeadersFromEnvironment(t *testing.T) {
	t.Setenv("USERID_HEADER", "x-goog-authenticated-user-email")
	t.Setenv("USERID_PREFIX", "accounts.google.com:")
	cfg, err := hostconfig.Parse("host.yaml", []byte("page: {enabled: true}\nplugins: {quotas: {}}\n"), registry(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := [2]string{cfg.Page.UserIDHeader, cfg.Page.UserIDPrefix}; got != [2]string{"x-goog-authenticated-user-email", "accounts.google.com:"} {
		t.Errorf("header and prefix = %q, want the upstream controller's variables", got)
	}
}
