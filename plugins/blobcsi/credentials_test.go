package blobcsi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/profilekit/profilekit/opa"
	"github.com/profilekit/profilekit/plugins"
)

// spnConfig is the test config with two principals, and a Protected B
// instance that creates containers with one of them and has no account key.
func spnConfig() *Config {
	c := testConfig()
	c.Principals = map[string]Principal{
		"sp-census": {ClientID: "11111111-1111-1111-1111-111111111111", TenantID: "tenant-a", Secret: SecretRef{Name: "sp-census", Namespace: "sys"}},
		"sp-prob":   {ClientID: "22222222-2222-2222-2222-222222222222", TenantID: "tenant-a", Secret: SecretRef{Name: "sp-prob", Namespace: "sys"}, AADEndpoint: "https://login.microsoftonline.us/"},
	}
	c.Storage[2].Credentials = Credentials{Type: ServicePrincipal, Principal: "sp-prob"}
	c.GrantSources = append(c.GrantSources, GrantSource{Name: "protected-b", Instance: "protected-b", ConfigMap: &ConfigMapSource{Namespace: "sys", Name: "prob-grants"}})
	return c
}

func TestMountFor(t *testing.T) {
	t.Parallel()
	cfg := spnConfig()
	std, _ := cfg.Instance("standard")
	prob, _ := cfg.Instance("protected-b")
	cases := []struct {
		reason  string
		vol     Volume
		want    Mount
		wantErr string
	}{{
		reason: "an instance's own volume mounts with its account-key Secret",
		vol:    Volume{Name: "standard", Instance: std, Claim: "standard"},
		want:   Mount{Secret: SecretRef{Name: "std", Namespace: "sys"}},
	}, {
		reason: "a bucket whose grant names no principal mounts as its instance",
		vol:    Volume{Name: "census", Instance: std, Source: "unclassified", Claim: "census"},
		want:   Mount{Secret: SecretRef{Name: "std", Namespace: "sys"}},
	}, {
		reason: "a bucket whose grant names a principal mounts with it, on the public cloud's authority by default",
		vol:    Volume{Name: "census", Instance: std, Source: "unclassified", Principal: "sp-census", Claim: "census"},
		want: Mount{Secret: SecretRef{Name: "sp-census", Namespace: "sys"}, Principal: "sp-census",
			ClientID: "11111111-1111-1111-1111-111111111111", TenantID: "tenant-a", AADEndpoint: DefaultAADEndpoint},
	}, {
		reason: "an instance without an account key mounts its own volume with its principal and authority",
		vol:    Volume{Name: "protected-b", Instance: prob, Claim: "protected-b"},
		want: Mount{Secret: SecretRef{Name: "sp-prob", Namespace: "sys"}, Principal: "sp-prob",
			ClientID: "22222222-2222-2222-2222-222222222222", TenantID: "tenant-a", AADEndpoint: "https://login.microsoftonline.us/"},
	}, {
		reason:  "a principal the host does not have is an error naming the volume",
		vol:     Volume{Name: "census", Instance: std, Source: "unclassified", Principal: "sp-nope", Claim: "census"},
		wantErr: `volume census: bucket census from unclassified names the service principal "sp-nope", which the host's principals do not have (sp-census, sp-prob)`,
	}}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			got, err := cfg.MountFor(c.vol)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("MountFor = %v, want %q", err, c.wantErr)
				}
				if !plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != ReasonUnknownPrincipal {
					t.Errorf("error %v: want terminal with reason %s", err, ReasonUnknownPrincipal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("mount (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildPVServicePrincipal(t *testing.T) {
	t.Parallel()
	cfg := spnConfig()
	grants := map[string]opa.Grants{
		"unclassified": mustGrants(t, `[{"bucketName":"census","readers":["team-a"],"spn":"sp-census"},{"bucketName":"open","writers":["team-a"]}]`),
	}
	vols, err := Desired(cfg, profile("team-a"), grants)
	if err != nil {
		t.Fatal(err)
	}
	csiOf := func(v Volume) any {
		b, _ := json.Marshal(BuildPV(cfg, "team-a", v).Spec.CSI)
		var got any
		_ = json.Unmarshal(b, &got)
		return got
	}
	cases := []struct {
		reason, vol, want string
	}{{
		reason: "a bucket whose grant names a principal: the driver's spn attributes and the principal's Secret",
		vol:    "census",
		want: `{"driver":"blob.csi.azure.com","volumeHandle":"#acctstd#census#team-a.census","readOnly":true,
		"volumeAttributes":{"containerName":"census","protocol":"fuse2","storageAccount":"acctstd","AzureStorageAuthType":"spn",
		"AzureStorageSPNClientID":"11111111-1111-1111-1111-111111111111","AzureStorageSPNTenantID":"tenant-a","AzureStorageAADEndpoint":"https://login.microsoftonline.com/"},
		"nodeStageSecretRef":{"name":"sp-census","namespace":"sys"}}`,
	}, {
		reason: "a bucket whose grant names none: the instance's account key, no spn attributes",
		vol:    "open",
		want: `{"driver":"blob.csi.azure.com","volumeHandle":"#acctstd#open#team-a.open",
		"volumeAttributes":{"containerName":"open","protocol":"fuse2","storageAccount":"acctstd"},"nodeStageSecretRef":{"name":"std","namespace":"sys"}}`,
	}}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			var want any
			if err := json.Unmarshal([]byte(c.want), &want); err != nil {
				t.Fatal(err)
			}
			for _, v := range vols {
				if v.Name == c.vol {
					if diff := cmp.Diff(want, csiOf(v)); diff != "" {
						t.Errorf("csi (-want +got):\n%s", diff)
					}
					return
				}
			}
			t.Fatalf("no volume %s", c.vol)
		})
	}
}

func TestCredentialsValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason  string
		mutate  func(*Config)
		wantErr string
	}{
		{"principals and a ServicePrincipal instance are valid", func(*Config) {}, ""},
		{"workload identity with an account-key Secret to mount with", func(c *Config) {
			c.Storage[0].Credentials.Type = WorkloadIdentity
			c.Storage[0].Credentials.WorkloadIdentity = &WorkloadIdentityCredentials{ClientID: "x", AuthorityHost: "https://login.example.org/"}
		}, ""},
		{"workload identity with the webhook's authority host (none set here)", func(c *Config) {
			c.Storage[0].Credentials.Type = WorkloadIdentity
			c.Storage[0].Credentials.WorkloadIdentity = &WorkloadIdentityCredentials{ClientID: "x"}
		}, ""},
		{"workload identity with an authority host over plain HTTP", func(c *Config) {
			c.Storage[0].Credentials.Type = WorkloadIdentity
			c.Storage[0].Credentials.WorkloadIdentity = &WorkloadIdentityCredentials{ClientID: "x", AuthorityHost: "http://login.example.org/"}
		}, `workloadIdentity.authorityHost: "http://login.example.org/": want https://host/`},
		{"an unknown type", func(c *Config) { c.Storage[0].Credentials.Type = "Password" }, `type "Password": want AccountKey, ServicePrincipal or WorkloadIdentity`},
		{"an account key needs its Secret", func(c *Config) { c.Storage[0].Credentials = Credentials{Principal: "sp-census"} }, "type AccountKey: want the account key's secretName"},
		{"a service principal instance names a principal the host has", func(c *Config) { c.Storage[2].Credentials.Principal = "sp-nope" }, `principal "sp-nope": not among principals (sp-census, sp-prob)`},
		{"an instance needs something to mount with", func(c *Config) {
			c.Storage[0].Credentials = Credentials{Type: WorkloadIdentity}
		}, "or a principal, to mount the instance's volumes with"},
		{"half a Secret reference", func(c *Config) { c.Storage[0].Credentials.SecretNamespace = "" }, "want both secretName and secretNamespace, or neither"},
		{"workload identity fields on another type", func(c *Config) {
			c.Storage[0].Credentials.WorkloadIdentity = &WorkloadIdentityCredentials{ClientID: "x"}
		}, "workloadIdentity is set but type is AccountKey"},
		{"an authority host over plain HTTP", func(c *Config) {
			p := c.Principals["sp-census"]
			p.AADEndpoint = "http://login.example.org/"
			c.Principals["sp-census"] = p
		}, `principals[sp-census]: aadEndpoint: "http://login.example.org/": want https://host/`},
		{"a principal needs its client, tenant and Secret", func(c *Config) { c.Principals["sp-empty"] = Principal{} }, "principals[sp-empty]: want clientID\nwant tenantID\nsecret: want name and namespace"},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			cfg := spnConfig()
			c.mutate(cfg)
			err := cfg.Validate()
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("Validate() = %v, want %q", err, c.wantErr)
			}
		})
	}
}
