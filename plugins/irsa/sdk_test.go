package irsa_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsiam "github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/google/go-cmp/cmp"

	"github.com/profilekit/profilekit/internal/fakecloud"
	"github.com/profilekit/profilekit/plugins/irsa"
)

// These tests run the wrapper around the aws-sdk-go-v2 iam client against a
// local server that speaks IAM's query protocol (fakecloud.AWS).

// startAWS starts the server, holding the role of roleARN with trust policy
// doc, and returns it with the IAM of a real SDK client pointed at it.
func startAWS(t *testing.T, doc string) (*fakecloud.AWS, irsa.IAM) {
	t.Helper()
	srv := fakecloud.NewAWS(t)
	srv.AddRole(roleARN, doc)
	c := awsiam.New(awsiam.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", Source: "test"}, nil
		}),
		// The standard retryer, with its backoff cut short.
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) { o.MaxBackoff = 20 * time.Millisecond }),
	})
	return srv, irsa.NewIAM(c)
}

// taggedPolicy has a condition value with a space and a plus sign, which
// IAM's URL encoding of the document writes as %20 and %2B.
const taggedPolicy = `{"Version":"2012-10-17","Statement":[{"Sid":"Ec2","Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole","Condition":{"StringEquals":{"aws:RequestTag/team":"data + ml"}}}]}`

func TestSDKAWSTrustPolicyLifecycle(t *testing.T) {
	srv, c := startAWS(t, taggedPolicy)

	t.Run("a read returns the document IAM holds, decoded", func(t *testing.T) {
		got, err := c.TrustPolicy(t.Context(), role)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if diff := cmp.Diff(taggedPolicy, got); diff != "" {
			t.Errorf("trust policy (-want +got):\n%s", diff)
		}
		answer := srv.Requests()[0].Answer
		if !strings.Contains(answer, "<AssumeRolePolicyDocument>%7B%22Version%22") || !strings.Contains(answer, "data%20%2B%20ml") {
			t.Errorf("the server did not answer with a URL-encoded document:\n%s", answer)
		}
	})

	updated := strings.Replace(startPolicy, `"Sid":"Ec2"`, `"Sid":"Ec2Again"`, 1)
	t.Run("a write replaces the document the server holds", func(t *testing.T) {
		if err := c.SetTrustPolicy(t.Context(), role, updated); err != nil {
			t.Fatalf("write: %v", err)
		}
		if got, _ := srv.TrustPolicy(role); got != updated {
			t.Errorf("server holds %s, want %s", got, updated)
		}
		got, err := c.TrustPolicy(t.Context(), role)
		if err != nil || got != updated {
			t.Errorf("read after write: %q, %v; want the written document", got, err)
		}
	})

	t.Run("a malformed document is IAM's MalformedPolicyDocument and is not stored", func(t *testing.T) {
		err := c.SetTrustPolicy(t.Context(), role, `{"Version":"2012-10-17"`)
		var mpd *iamtypes.MalformedPolicyDocumentException
		if !errors.As(err, &mpd) {
			t.Errorf("write of a malformed document: %v, want MalformedPolicyDocumentException", err)
		}
		if got, _ := srv.TrustPolicy(role); got != updated {
			t.Errorf("server holds %s after a refused write", got)
		}
	})

	t.Run("a role that does not exist", func(t *testing.T) {
		_, err := c.TrustPolicy(t.Context(), "gone")
		if !errors.Is(err, irsa.ErrNoRole) {
			t.Errorf("read: %v, want ErrNoRole", err)
		}
		var nse *iamtypes.NoSuchEntityException
		if err := c.SetTrustPolicy(t.Context(), "gone", startPolicy); !errors.As(err, &nse) {
			t.Errorf("write: %v, want NoSuchEntityException", err)
		}
	})

	t.Run("the client sends the actions and parameters of the query protocol", func(t *testing.T) {
		want := []string{"GetRole 200", "UpdateAssumeRolePolicy 200", "GetRole 200", "UpdateAssumeRolePolicy 400", "GetRole 404", "UpdateAssumeRolePolicy 404"}
		if diff := cmp.Diff(want, srv.Calls()); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		reqs := srv.Requests()
		if diff := cmp.Diff("Action=GetRole\nRoleName="+role+"\nVersion=2010-05-08", reqs[0].Body); diff != "" {
			t.Errorf("GetRole form (-want +got):\n%s", diff)
		}
		wantSet := url.Values{"Action": {"UpdateAssumeRolePolicy"}, "RoleName": {role}, "PolicyDocument": {updated}, "Version": {"2010-05-08"}}
		if diff := cmp.Diff(readableForm(wantSet), reqs[1].Body); diff != "" {
			t.Errorf("UpdateAssumeRolePolicy form (-want +got):\n%s", diff)
		}
	})
	if err := srv.WriteFile("/tmp/evidence/sdk-aws-requests.txt"); err != nil {
		t.Errorf("request log: %v", err)
	}
}

// readableForm is a form as the log shows it: a sorted field a line.
func readableForm(v url.Values) string {
	var lines []string
	for _, k := range []string{"Action", "PolicyDocument", "RoleName", "Version"} {
		if _, ok := v[k]; ok {
			lines = append(lines, k+"="+v.Get(k))
		}
	}
	return strings.Join(lines, "\n")
}

// TestSDKAWSThrottled: IAM answers a caller over its rate with 400
// Throttling (and no Retry-After); the SDK's standard retryer makes the call
// again after its own backoff, up to three attempts in all.
func TestSDKAWSThrottled(t *testing.T) {
	tests := []struct {
		reason    string
		call      string
		throttles int
		wantErr   bool
	}{
		{reason: "a read throttled twice succeeds on the third attempt", call: "GetRole", throttles: 2},
		{reason: "a write throttled twice succeeds on the third attempt", call: "UpdateAssumeRolePolicy", throttles: 2},
		{reason: "a write throttled three times fails with IAM's code and writes nothing", call: "UpdateAssumeRolePolicy", throttles: 3, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			srv, c := startAWS(t, startPolicy)
			for range tt.throttles {
				srv.Fail(tt.call, fakecloud.Throttle)
			}
			doc := strings.Replace(startPolicy, `"Sid":"Ec2"`, `"Sid":"Ec2Again"`, 1)
			var err error
			if tt.call == "GetRole" {
				var got string
				got, err = c.TrustPolicy(t.Context(), role)
				if err == nil && got != startPolicy {
					t.Errorf("read %s, want the role's document", got)
				}
			} else {
				err = c.SetTrustPolicy(t.Context(), role, doc)
			}
			var want []string
			for range tt.throttles {
				want = append(want, tt.call+" 400")
			}
			var ae interface{ ErrorCode() string } // smithy.APIError
			switch {
			case tt.wantErr:
				if !errors.As(err, &ae) || ae.ErrorCode() != "Throttling" {
					t.Errorf("error %v, want IAM's Throttling", err)
				}
				if got, _ := srv.TrustPolicy(role); got != startPolicy {
					t.Errorf("server holds %s after failed writes", got)
				}
			case err != nil:
				t.Fatalf("call: %v", err)
			default:
				want = append(want, tt.call+" 200")
				if got, _ := srv.TrustPolicy(role); tt.call == "UpdateAssumeRolePolicy" && got != doc {
					t.Errorf("server holds %s, want the written document", got)
				}
			}
			if diff := cmp.Diff(want, srv.Calls()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSDKAWSTimeout: a server that never answers; the call ends with the
// context's deadline, soon after it, without another attempt.
func TestSDKAWSTimeout(t *testing.T) {
	for _, call := range []string{"GetRole", "UpdateAssumeRolePolicy"} {
		t.Run(call, func(t *testing.T) {
			srv, c := startAWS(t, startPolicy)
			srv.Fail(call, fakecloud.Hang)
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			var err error
			if call == "GetRole" {
				_, err = c.TrustPolicy(ctx, role)
			} else {
				err = c.SetTrustPolicy(ctx, role, startPolicy)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v, want the context's deadline", err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("took %v past a 300ms deadline", took)
			}
			if diff := cmp.Diff([]string{call + " 0"}, srv.Calls()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if got, _ := srv.TrustPolicy(role); got != startPolicy {
				t.Errorf("server holds %s", got)
			}
		})
	}
}
