package blobcsi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/opa"
	"github.com/profilekit/profilekit/plugins/outside"
)

func testConfig() *Config {
	c := NewConfig()
	capacity := resource.MustParse("10Gi")
	c.Storage = []Instance{
		{Name: "standard", Classification: "unclassified", Account: "acctstd", Credentials: Credentials{SecretName: "std", SecretNamespace: "sys"}, Default: true, Capacity: &capacity},
		{Name: "standard-ro", Classification: "unclassified", Account: "acctstd", Credentials: Credentials{SecretName: "std", SecretNamespace: "sys"}, ReadOnly: true, MountOptions: []string{"-o allow_other"}},
		{Name: "protected-b", Classification: "protected-b", Account: "acctprob", ResourceGroup: "rg", Credentials: Credentials{SecretName: "prob", SecretNamespace: "sys"}, Protocol: "fuse"},
	}
	c.GrantSources = []GrantSource{{Name: "unclassified", Instance: "standard", ConfigMap: &ConfigMapSource{Namespace: "sys", Name: "grants"}}}
	return c
}

func profile(name string) *kubeflowv1.Profile {
	return &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func mustGrants(t *testing.T, doc string) opa.Grants {
	t.Helper()
	g, err := opa.Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestContainerName(t *testing.T) {
	t.Parallel()
	cases := []struct{ reason, in, want string }{
		{"a valid name stays", "team-a", "team-a"},
		{"a short name gets a hash", "ab", "ab-" + hash20("ab")},
		{"double hyphens are collapsed and hashed", "team--a", "team-a-" + hash20("team--a")},
		{"a long name is cut and hashed", strings.Repeat("a", 70), strings.Repeat("a", 42) + "-" + hash20(strings.Repeat("a", 70))},
		{"a valid name shaped like a hashed one is hashed too", "ab-" + hash20("ab"), "ab-" + hash20("ab") + "-" + hash20("ab-"+hash20("ab"))},
		{"a name with nothing to keep", "--", "c-" + hash20("--")},
		{"a valid name that ends in a shorter hash stays", "ab-fb8e20fc", "ab-fb8e20fc"},
		{"the first and last letters and digits are kept", "A.z_0.9", "a-z-0-9-" + hash20("A.z_0.9")},
		{"a name one letter longer than the cut is cut", strings.Repeat("a", 43) + "_", strings.Repeat("a", 42) + "-" + hash20(strings.Repeat("a", 43)+"_")},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			got := ContainerName(c.in)
			if got != c.want {
				t.Errorf("ContainerName(%q) = %q, want %q", c.in, got, c.want)
			}
			if err := opa.ValidateContainerName(got); err != nil {
				t.Error(err)
			}
		})
	}
}

func hash20(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:20]
}

// oldHash is the 8-digit hash that earlier versions put on hashed names,
// which a valid name could copy.
func oldHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

// FuzzContainerName: two different rendered names never get one container,
// and every container name is valid. The seeds include the collisions the
// earlier mapping allowed: a valid name equal to another name's hashed form.
func FuzzContainerName(f *testing.F) {
	f.Add("ab", "ab-"+oldHash("ab"))
	f.Add("team--a", "team-a-"+oldHash("team--a"))
	f.Add(strings.Repeat("a", 70), strings.Repeat("a", 54)+"-"+oldHash(strings.Repeat("a", 70)))
	f.Add("x", "ns-"+oldHash("x"))
	f.Add("ab", "ab-"+hash20("ab"))
	f.Add("--", "c-"+hash20("--"))
	f.Add("a--b", "a---b")
	f.Add("Team-A", "team-a")
	f.Add(strings.Repeat("b", 64), strings.Repeat("b", 65))
	f.Fuzz(func(t *testing.T, a, b string) {
		ca, cb := ContainerName(a), ContainerName(b)
		for in, out := range map[string]string{a: ca, b: cb} {
			if err := opa.ValidateContainerName(out); err != nil {
				t.Fatalf("ContainerName(%q) = %q: %v", in, out, err)
			}
		}
		if a != b && ca == cb {
			t.Fatalf("ContainerName(%q) = ContainerName(%q) = %q", a, b, ca)
		}
		if ContainerName(a) != ca {
			t.Fatalf("ContainerName(%q) is not stable", a)
		}
	})
}

func TestDesired(t *testing.T) {
	t.Parallel()
	grants := `[{"bucketName":"census","readers":["team-a"],"writers":["team-b"],"spn":"sp"},
	            {"bucketName":"labour","pvName":"labour-2026","subfolder":"2026","writers":["team-a"],"readers":["team-a"]}]`
	type vol struct {
		Name, Container, Subfolder, PV, Claim, Source string
		ReadOnly                                      bool
	}
	cases := []struct {
		reason    string
		profile   string
		instances []string
		grants    map[string]opa.Grants
		want      []vol
		wantErr   string
	}{{
		reason:  "default instances only, without grants",
		profile: "team-c",
		want:    []vol{{Name: "standard", Container: "team-c", PV: "team-c.standard", Claim: "standard"}},
	}, {
		reason:    "the Profile's choice; a read-only instance gives a read-only volume",
		profile:   "team-c",
		instances: []string{"standard-ro", "protected-b"},
		want: []vol{
			{Name: "protected-b", Container: "team-c", PV: "team-c.protected-b", Claim: "protected-b"},
			{Name: "standard-ro", Container: "team-c", PV: "team-c.standard-ro", Claim: "standard-ro", ReadOnly: true},
		},
	}, {
		reason:  "a reader gets a read-only volume, a writer that also reads a read-write one",
		profile: "team-a",
		grants:  map[string]opa.Grants{"unclassified": mustGrants(t, grants)},
		want: []vol{
			{Name: "census", Container: "census", PV: "team-a.census", Claim: "census", Source: "unclassified", ReadOnly: true},
			{Name: "labour-2026", Container: "labour", Subfolder: "2026", PV: "team-a.labour-2026", Claim: "labour-2026", Source: "unclassified"},
			{Name: "standard", Container: "team-a", PV: "team-a.standard", Claim: "standard"},
		},
	}, {
		reason:  "a writer gets a read-write volume",
		profile: "team-b",
		grants:  map[string]opa.Grants{"unclassified": mustGrants(t, grants)},
		want: []vol{
			{Name: "census", Container: "census", PV: "team-b.census", Claim: "census", Source: "unclassified"},
			{Name: "standard", Container: "team-b", PV: "team-b.standard", Claim: "standard"},
		},
	}, {
		reason:  "a bucket whose volume name is an instance's is an error",
		profile: "team-a",
		grants:  map[string]opa.Grants{"unclassified": mustGrants(t, `[{"bucketName":"census","pvName":"standard","readers":["team-a"]}]`)},
		wantErr: `would share the claim "standard"`,
	}}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			cfg := testConfig()
			cfg.Instances = c.instances
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			vols, err := Desired(cfg, profile(c.profile), c.grants)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []vol
			for _, v := range vols {
				got = append(got, vol{Name: v.Name, Container: v.Container, Subfolder: v.Subfolder, PV: v.PV, Claim: v.Claim, Source: v.Source, ReadOnly: v.ReadOnly})
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("volumes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildPVAndPVC(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Instances = []string{"standard-ro", "protected-b"}
	cfg.PVCLabels = map[string]string{"automount.example.org/blob": "true"}
	vols, err := Desired(cfg, profile("team-a"), map[string]opa.Grants{"unclassified": mustGrants(t, `[{"bucketName":"census","subfolder":"x/y","readers":["team-a"]}]`)})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Volume{}
	for _, v := range vols {
		byName[v.Name] = v
	}
	cases := []struct {
		reason string
		vol    string
		pv     string
		pvc    string
	}{{
		reason: "a read-only instance: ReadOnlyMany, -o ro, csi readOnly, default capacity",
		vol:    "standard-ro",
		pv: `{"kind":"PersistentVolume","apiVersion":"v1","metadata":{"name":"team-a.standard-ro","labels":{"blobcsi.profilekit.dev/instance":"standard-ro","data.profilekit.dev/classification":"unclassified"}},
		"spec":{"capacity":{"storage":"1Ti"},"csi":{"driver":"blob.csi.azure.com","volumeHandle":"#acctstd#team-a#team-a.standard-ro","readOnly":true,
		"volumeAttributes":{"containerName":"team-a","protocol":"fuse2","storageAccount":"acctstd"},"nodeStageSecretRef":{"name":"std","namespace":"sys"}},
		"accessModes":["ReadOnlyMany"],"claimRef":{"kind":"PersistentVolumeClaim","namespace":"team-a","name":"standard-ro","apiVersion":"v1"},
		"persistentVolumeReclaimPolicy":"Retain","storageClassName":"","mountOptions":["-o allow_other","-o ro"]}}`,
		pvc: `{"kind":"PersistentVolumeClaim","apiVersion":"v1","metadata":{"name":"standard-ro","namespace":"team-a","labels":{"automount.example.org/blob":"true","blobcsi.profilekit.dev/instance":"standard-ro","data.profilekit.dev/classification":"unclassified"}},
		"spec":{"accessModes":["ReadOnlyMany"],"resources":{"requests":{"storage":"1Ti"}},"volumeName":"team-a.standard-ro","storageClassName":""}}`,
	}, {
		reason: "a read-write instance with a resource group and protocol",
		vol:    "protected-b",
		pv: `{"kind":"PersistentVolume","apiVersion":"v1","metadata":{"name":"team-a.protected-b","labels":{"blobcsi.profilekit.dev/instance":"protected-b","data.profilekit.dev/classification":"protected-b"}},
		"spec":{"capacity":{"storage":"1Ti"},"csi":{"driver":"blob.csi.azure.com","volumeHandle":"rg#acctprob#team-a#team-a.protected-b",
		"volumeAttributes":{"containerName":"team-a","protocol":"fuse","resourceGroup":"rg","storageAccount":"acctprob"},"nodeStageSecretRef":{"name":"prob","namespace":"sys"}},
		"accessModes":["ReadWriteMany"],"claimRef":{"kind":"PersistentVolumeClaim","namespace":"team-a","name":"protected-b","apiVersion":"v1"},
		"persistentVolumeReclaimPolicy":"Retain","storageClassName":""}}`,
		pvc: `{"kind":"PersistentVolumeClaim","apiVersion":"v1","metadata":{"name":"protected-b","namespace":"team-a","labels":{"automount.example.org/blob":"true","blobcsi.profilekit.dev/instance":"protected-b","data.profilekit.dev/classification":"protected-b"}},
		"spec":{"accessModes":["ReadWriteMany"],"resources":{"requests":{"storage":"1Ti"}},"volumeName":"team-a.protected-b","storageClassName":""}}`,
	}, {
		reason: "a shared bucket read by the namespace: the source label, the subfolder, the instance's capacity",
		vol:    "census",
		pv: `{"kind":"PersistentVolume","apiVersion":"v1","metadata":{"name":"team-a.census","labels":{"blobcsi.profilekit.dev/instance":"standard","blobcsi.profilekit.dev/source":"unclassified","data.profilekit.dev/classification":"unclassified"}},
		"spec":{"capacity":{"storage":"10Gi"},"csi":{"driver":"blob.csi.azure.com","volumeHandle":"#acctstd#census#team-a.census","readOnly":true,
		"volumeAttributes":{"containerName":"census","protocol":"fuse2","storageAccount":"acctstd"},"nodeStageSecretRef":{"name":"std","namespace":"sys"}},
		"accessModes":["ReadOnlyMany"],"claimRef":{"kind":"PersistentVolumeClaim","namespace":"team-a","name":"census","apiVersion":"v1"},
		"persistentVolumeReclaimPolicy":"Retain","storageClassName":"","mountOptions":["--subdirectory=x/y","-o ro"]}}`,
		pvc: `{"kind":"PersistentVolumeClaim","apiVersion":"v1","metadata":{"name":"census","namespace":"team-a","labels":{"automount.example.org/blob":"true","blobcsi.profilekit.dev/instance":"standard","blobcsi.profilekit.dev/source":"unclassified","data.profilekit.dev/classification":"unclassified"}},
		"spec":{"accessModes":["ReadOnlyMany"],"resources":{"requests":{"storage":"10Gi"}},"volumeName":"team-a.census","storageClassName":""}}`,
	}}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			v, ok := byName[c.vol]
			if !ok {
				t.Fatalf("no volume %s in %v", c.vol, vols)
			}
			for what, pair := range map[string][2]any{"PV": {c.pv, BuildPV(cfg, "team-a", v)}, "PVC": {c.pvc, BuildPVC(cfg, "team-a", v)}} {
				var want, got any
				if err := json.Unmarshal([]byte(pair[0].(string)), &want); err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(pair[1])
				_ = json.Unmarshal(b, &got)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", what, diff)
				}
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason  string
		mutate  func(*Config)
		wantErr string
	}{
		{"the test config is valid", func(*Config) {}, ""},
		{"a Profile may not choose an instance the host does not offer", func(c *Config) { c.Instances = []string{"premium"} }, `instances[0]: "premium" is not an instance the host offers`},
		{"an account name must be an Azure account name", func(c *Config) { c.Storage[0].Account = "Bad_Account" }, `account "Bad_Account"`},
		{"a source needs exactly one of opa and configMap", func(c *Config) { c.GrantSources[0].OPA = &OPASource{URL: "http://opa:8181", Path: "x"} }, "exactly one of opa and configMap"},
		{"a source names an instance", func(c *Config) { c.GrantSources[0].Instance = "nope" }, `instance "nope": not among storage`},
		{"a naming template takes known placeholders only", func(c *Config) { c.Names.PersistentVolume = "{{ .Team }}-x" }, "unknown placeholder"},
		{"two instances of one name", func(c *Config) { c.Storage[1].Name = "standard" }, `name "standard" is used twice`},
		{"an unknown protocol", func(c *Config) { c.Storage[0].Protocol = "smb" }, `protocol "smb"`},
		{"a drop share above 1", func(c *Config) { c.GrantSources[0].MaxDropShare = 2 }, "maxDropShare 2"},
		{"an OPA source asked at the default interval", func(c *Config) {
			c.GrantSources[0].ConfigMap, c.GrantSources[0].OPA = nil, &OPASource{URL: "http://opa:8181", Path: "storage/grants"}
		}, ""},
		{"an OPA source asked at an interval below zero", func(c *Config) {
			c.GrantSources[0].ConfigMap = nil
			c.GrantSources[0].OPA = &OPASource{URL: "http://opa:8181", Path: "storage/grants", Interval: metav1.Duration{Duration: -time.Second}}
		}, "opa.interval -1s"},
		{"a configMap source without its name", func(c *Config) { c.GrantSources[0].ConfigMap.Name = "" }, "configMap: want namespace and name"},
		{"a drop share of all of them", func(c *Config) { c.GrantSources[0].MaxDropShare = 1 }, ""},
		{"a drop share below 0", func(c *Config) { c.GrantSources[0].MaxDropShare = -0.5 }, "maxDropShare -0.5"},
		{"a classification a label may not hold", func(c *Config) { c.Storage[0].Classification = "protected b" }, `classification "protected b"`},
		{"a capacity of nothing", func(c *Config) { zero := resource.MustParse("0"); c.Storage[0].Capacity = &zero }, "capacity 0: want a positive quantity"},
		// Azure's storage account names: 3 to 24 lower-case letters and digits.
		{"an account name of 3", func(c *Config) { c.Storage[0].Account = "a0z" }, ""},
		{"an account name of 2", func(c *Config) { c.Storage[0].Account = "a9" }, `account "a9"`},
		{"an account name of 24", func(c *Config) { c.Storage[0].Account = "z9" + strings.Repeat("a", 22) }, ""},
		{"an account name of 25", func(c *Config) { c.Storage[0].Account = strings.Repeat("a", 25) }, `account "` + strings.Repeat("a", 25) + `"`},
		{"no volume deletes at all is a cap", func(c *Config) { c.MaxVolumeDeletes = 0 }, ""},
		{"a cap below zero", func(c *Config) { c.MaxVolumeDeletes = -1 }, "maxVolumeDeletes -1: want zero or more"},
		{"a window of no time", func(c *Config) { c.DeleteWindow.Duration = 0 }, "deleteWindow 0s: want a positive duration"},
		// PersistentVolume names are cluster-wide: a template under which
		// two namespaces' volumes meet is refused, with the two named.
		{"namespace and volume joined by a hyphen", func(c *Config) { c.Names.PersistentVolume = "{{ .Namespace }}-{{ .Volume }}" },
			`namespace a's volume b-c and namespace a-b's volume c the same name "a-b-c"`},
		{"namespace and volume joined by nothing", func(c *Config) { c.Names.PersistentVolume = "kf-{{ .Namespace }}{{ .Volume }}" }, `the same name "kf-abc"`},
		{"volume first, joined by text a label may hold", func(c *Config) { c.Names.PersistentVolume = "{{ .Volume }}-of-{{ .Profile }}" }, `the same name "a-of-b-of-c"`},
		{"no namespace", func(c *Config) { c.Names.PersistentVolume = "pv-{{ .Volume }}" }, `namespace a's volume v and namespace b's volume v`},
		{"no volume", func(c *Config) { c.Names.PersistentVolume = "{{ .Namespace }}-pv" }, `namespace a's volume v and namespace a's volume w`},
		{"joined by a dot, volume first", func(c *Config) { c.Names.PersistentVolume = "kf.{{ .Volume }}.{{ .Namespace }}" }, ""},
		{"joined by a dot and more", func(c *Config) { c.Names.PersistentVolume = "{{ .Namespace }}-x.{{ .Volume }}" }, ""},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			cfg := testConfig()
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

// FuzzDefaultPVNameIsInjective: no two (namespace, volume) pairs share a
// PersistentVolume name under the default template: a namespace holds no
// dot, so the first dot splits the name back. Under the earlier template,
// namespace q's volume lab-census met q-lab's census.
func FuzzDefaultPVNameIsInjective(f *testing.F) {
	f.Add("q", "lab-census", "q-lab", "census")
	f.Add("team-a", "standard", "team", "a-standard")
	f.Fuzz(func(t *testing.T, ns1, vol1, ns2, vol2 string) {
		if ns1 == ns2 && vol1 == vol2 {
			return
		}
		for _, ns := range []string{ns1, ns2} {
			if len(validation.IsDNS1123Label(ns)) > 0 {
				return
			}
		}
		a, err1 := render(DefaultPVName, ns1, vol1)
		b, err2 := render(DefaultPVName, ns2, vol2)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if a == b {
			t.Errorf("%s/%s and %s/%s share the PersistentVolume name %q", ns1, vol1, ns2, vol2, a)
		}
	})
}

// TestDeleteRecordPlace: the ledger of volume deletions is where the host
// names it, else beside the first instance's credentials; a host that
// offers no instance still gets a name.
func TestDeleteRecordPlace(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason string
		mutate func(*Config)
		want   outside.ConfigMapRef
	}{
		{"beside the first instance's Secret", func(*Config) {}, outside.ConfigMapRef{Namespace: "sys", Name: DefaultDeleteRecord}},
		{"where the host names it", func(c *Config) { c.DeleteRecord = outside.ConfigMapRef{Namespace: "ops", Name: "deletes"} },
			outside.ConfigMapRef{Namespace: "ops", Name: "deletes"}},
		{"beside the first instance's principal's Secret", func(c *Config) {
			c.Principals = map[string]Principal{"sp": {Secret: SecretRef{Namespace: "spns", Name: "sp"}}}
			c.Storage[0].Credentials = Credentials{Principal: "sp"}
		}, outside.ConfigMapRef{Namespace: "spns", Name: DefaultDeleteRecord}},
		{"no instance offered", func(c *Config) { c.Storage = nil }, outside.ConfigMapRef{Name: DefaultDeleteRecord}},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			cfg := testConfig()
			c.mutate(cfg)
			if got := cfg.deleteRecord(); got != c.want {
				t.Errorf("deleteRecord() = %+v, want %+v", got, c.want)
			}
		})
	}
}
