package plugintest_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsiam "github.com/aws/aws-sdk-go-v2/service/iam"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/fakecloud"
	"github.com/profilekit/profilekit/plugins/irsa"
	"github.com/profilekit/profilekit/plugins/irsa/trustpolicy"
	"github.com/profilekit/profilekit/plugins/plugintest"
)

const (
	awsProvider = "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC123"
	awsRoles    = "arn:aws:iam::111122223333:role/kubeflow/"
	awsPolicy   = `{"Version":"2012-10-17","Statement":[{"Sid":"Ec2","Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}`
)

// irsaScenario is the irsa plugin against the local AWS IAM server: a
// Profile trusts one role of its own, moves to another, and lets go (each
// run has its roles: a plan that ends mid-scenario keeps its statement,
// and IAM holds few in one trust policy). Observe reads the statements of
// the Profile's namespace from both roles' trust policies and the
// annotation on its service account; Grants names whom each statement of
// either role trusts.
func irsaScenario(t *testing.T) plugintest.Scenario {
	srv := fakecloud.NewAWS(t)
	c := awsiam.New(awsiam.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", Source: "test"}, nil
		}),
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) { o.MaxBackoff = 20 * time.Millisecond }),
	})
	defaults := mustJSON(t, map[string]any{
		"oidcProvider": awsProvider,
		"allowedIdentities": []any{
			map[string]any{"identity": awsRoles + "{{ .Namespace }}-a"},
			map[string]any{"identity": awsRoles + "{{ .Namespace }}-b"},
		},
	})
	return plugintest.Scenario{
		Def:      irsa.Definition(irsa.NewIAM(c)),
		Defaults: defaults,
		Steps: []plugintest.Step{
			{Name: "trust a role", Spec: map[string]any{"awsIamRole": awsRoles + "{{ .Profile }}-a"}},
			{Name: "move to another", Spec: map[string]any{"awsIamRole": awsRoles + "{{ .Profile }}-b"}},
			{Name: "remove", Remove: true},
			{Name: "add again", Spec: map[string]any{"awsIamRole": awsRoles + "{{ .Profile }}-a"}},
			{Name: "delete the Profile", Delete: true},
		},
		Setup: func(ctx context.Context, c client.Client, namespace string) error {
			srv.AddRole(awsRoles+namespace+"-a", awsPolicy)
			srv.AddRole(awsRoles+namespace+"-b", awsPolicy)
			return c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: irsa.DefaultServiceAccount}})
		},
		Observe: func(ctx context.Context, namespace string) (map[string]string, error) {
			out := map[string]string{}
			sid := trustpolicy.StatementID(awsProvider, namespace)
			for _, role := range []string{namespace + "-a", namespace + "-b"} {
				doc, _ := srv.TrustPolicy(role)
				var policy struct{ Statement []map[string]any }
				if err := json.Unmarshal([]byte(doc), &policy); err != nil {
					return nil, err
				}
				for _, st := range policy.Statement {
					if st["Sid"] == sid {
						st["Sid"] = "<sid>"
						b, _ := json.Marshal(st)
						out["trust "+role] = string(b)
					}
				}
			}
			var sa corev1.ServiceAccount
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: irsa.DefaultServiceAccount}, &sa); err != nil {
				return nil, err
			}
			if v := sa.Annotations[irsa.AnnotationRoleARN]; v != "" {
				out["annotation"] = v
			}
			return out, nil
		},
		Grants: func(_ context.Context, namespace string) ([]string, error) {
			var out []string
			for _, role := range []string{namespace + "-a", namespace + "-b"} {
				doc, _ := srv.TrustPolicy(role)
				var policy struct{ Statement []struct{ Condition any } }
				if err := json.Unmarshal([]byte(doc), &policy); err != nil {
					return nil, err
				}
				for _, st := range policy.Statement {
					if st.Condition != nil {
						b, _ := json.Marshal(st.Condition)
						out = append(out, "trust "+role+": "+string(b))
					}
				}
			}
			return out, nil
		},
		// A rival may name the Profile's roles, which serve one Profile.
		RivalDefaults: func(profile string) []byte {
			return mustJSON(t, map[string]any{"oidcProvider": awsProvider, "allowedIdentities": []any{
				map[string]any{"identity": awsRoles + profile + "-a"},
				map[string]any{"identity": awsRoles + profile + "-b"},
			}})
		},
		Equivalent: map[string]string{
			plugintest.CallTwice.Name: "every call is a read and edit of one role's trust policy under the role's lock that writes only when the " +
				"Profile's statement is missing (trust) or there (untrust): made again at once, it reads the policy, finds it as wanted and writes " +
				"nothing. The second call costs one IAM read and changes nothing IAM, the record or the harness can tell (the lost plans, which make " +
				"each call again on the next pass, pass as well)",
		},
		Touches:  []string{"ServiceAccount <profile>/" + irsa.DefaultServiceAccount},
		Retained: []string{"annotation"}, // in the namespace, which goes with the Profile
	}
}

func TestIRSASurvivesEveryPerturbation(t *testing.T) {
	plugintest.Harness{Client: env.Client}.Survives(t, irsaScenario, plugintest.EveryPattern...)
}
