package hostconfig_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
)

func TestWebhookSection(t *testing.T) {
	yes := true
	tests := []struct {
		reason  string
		yaml    string
		want    hostconfig.Webhook
		wantErr []string
	}{
		{
			reason: "off, with its defaults filled in",
			yaml:   "plugins: {quotas: {}}\n",
			want:   hostconfig.Webhook{Port: 9443, Path: "/validate-profiles", CertDir: "/tmp/k8s-webhook-server/serving-certs", Certificates: "files"},
		},
		{
			reason: "certificates from files, such as cert-manager's Secret",
			yaml:   "webhook: {enabled: true, certDir: /etc/profilekit/webhook, warnUnknownPlugins: true}\nplugins: {quotas: {}}\n",
			want:   hostconfig.Webhook{Enabled: true, Port: 9443, Path: "/validate-profiles", CertDir: "/etc/profilekit/webhook", Certificates: "files", WarnUnknownPlugins: &yes},
		},
		{
			reason: "self-signed, with the Secret and configuration names defaulted",
			yaml:   "webhook: {enabled: true, certificates: selfSigned, selfSigned: {dnsNames: [profilekit-webhook.profilekit-system.svc]}}\nplugins: {quotas: {}}\n",
			want: hostconfig.Webhook{Enabled: true, Port: 9443, Path: "/validate-profiles", CertDir: "/tmp/k8s-webhook-server/serving-certs", Certificates: "selfSigned",
				SelfSigned: hostconfig.SelfSigned{SecretName: "profilekit-webhook-tls", ConfigurationName: "profilekit", DNSNames: []string{"profilekit-webhook.profilekit-system.svc"}}},
		},
		{
			reason:  "self-signed needs a name to sign",
			yaml:    "webhook: {enabled: true, certificates: selfSigned}\nplugins: {quotas: {}}\n",
			wantErr: []string{"host.yaml: webhook.selfSigned.dnsNames: empty"},
		},
		{
			reason:  "self-signed settings without self-signed certificates",
			yaml:    "webhook: {enabled: true, selfSigned: {dnsNames: [a.b.svc]}}\nplugins: {quotas: {}}\n",
			wantErr: []string{"host.yaml: webhook.selfSigned: is used only with certificates: selfSigned, and certificates is files"},
		},
		{
			reason: "every problem at once",
			yaml:   "webhook: {port: 70000, path: validate, certificates: selfSigned, selfSigned: {dnsNames: [Not_A_Name], ipAddresses: [300.1.1.1], secretName: Bad_Name}}\nplugins: {quotas: {}}\n",
			wantErr: []string{
				"host.yaml: webhook.port: want a port between 1 and 65535, got 70000",
				`host.yaml: webhook.path: want a path that starts with /, got "validate"`,
				`host.yaml: webhook.selfSigned.secretName: "Bad_Name"`,
				`host.yaml: webhook.selfSigned.dnsNames[0]: "Not_A_Name"`,
				`host.yaml: webhook.selfSigned.ipAddresses[0]: "300.1.1.1" is not an IP address`,
			},
		},
		{reason: "an unknown certificate source", yaml: "webhook: {certificates: vault}\nplugins: {quotas: {}}\n", wantErr: []string{`host.yaml: webhook.certificates: want files or selfSigned, got "vault"`}},
		{reason: "an unknown webhook field", yaml: "webhook: {enable: true}\nplugins: {quotas: {}}\n", wantErr: []string{"host.yaml: webhook.enable: unknown field"}},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			cfg, err := hostconfig.Parse("host.yaml", []byte(tt.yaml), registry(t))
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Parse = %+v, want an error", cfg.Webhook)
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
			if diff := cmp.Diff(tt.want, cfg.Webhook); diff != "" {
				t.Errorf("webhook (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestTimeout(t *testing.T) {
	cfg, err := hostconfig.Parse("host.yaml", []byte("client: {requestTimeout: 5s}\nplugins: {quotas: {}}\n"), registry(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Client.Timeout(); got != 5*time.Second {
		t.Errorf("Timeout = %s, want 5s", got)
	}
	if _, err := hostconfig.Parse("host.yaml", []byte("client: {requestTimeout: 0s}\nplugins: {quotas: {}}\n"), registry(t)); err == nil || !strings.Contains(err.Error(), "host.yaml: client.requestTimeout: must be positive") {
		t.Errorf("error %v, want a zero timeout refused", err)
	}
	def, _ := hostconfig.Parse("host.yaml", []byte("plugins: {quotas: {}}\n"), registry(t))
	if got := def.Client.Timeout(); got != 15*time.Second {
		t.Errorf("default Timeout = %s, want 15s", got)
	}
}

func TestMaxInFlight(t *testing.T) {
	cfg, err := hostconfig.Parse("host.yaml", []byte("client: {maxInFlight: 64}\nplugins: {quotas: {}}\n"), registry(t))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Client.MaxInFlight != 64 {
		t.Errorf("MaxInFlight = %d, want 64", cfg.Client.MaxInFlight)
	}
	if _, err := hostconfig.Parse("host.yaml", []byte("client: {maxInFlight: -1}\nplugins: {quotas: {}}\n"), registry(t)); err == nil || !strings.Contains(err.Error(), "host.yaml: client.maxInFlight: must not be negative, got -1") {
		t.Errorf("error %v, want a negative limit refused", err)
	}
	def, err := hostconfig.Parse("host.yaml", []byte("plugins: {quotas: {}}\n"), registry(t))
	if err != nil {
		t.Fatal(err)
	}
	if def.Client.MaxInFlight != hostconfig.DefaultMaxInFlight || hostconfig.DefaultMaxInFlight <= 0 {
		t.Errorf("default MaxInFlight = %d, want %d", def.Client.MaxInFlight, hostconfig.DefaultMaxInFlight)
	}
}

func TestPrecedenceWait(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want time.Duration
	}{
		{"client: {precedenceWait: 250ms}\n", 250 * time.Millisecond},
		{"client: {precedenceWait: 0s}\n", 0},
		{"", time.Second},
	} {
		cfg, err := hostconfig.Parse("host.yaml", []byte(tt.yaml+"plugins: {quotas: {}}\n"), registry(t))
		if err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		if got := cfg.Client.Precedence(); got != tt.want {
			t.Errorf("%q: Precedence = %s, want %s", tt.yaml, got, tt.want)
		}
	}
	if _, err := hostconfig.Parse("host.yaml", []byte("client: {precedenceWait: -1s}\nplugins: {quotas: {}}\n"), registry(t)); err == nil || !strings.Contains(err.Error(), "host.yaml: client.precedenceWait: must not be negative, got -1s") {
		t.Errorf("error %v, want a negative wait refused", err)
	}
}
