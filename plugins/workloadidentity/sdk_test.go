package workloadidentity_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/googleapi"
	iam "google.golang.org/api/iam/v1"
	"google.golang.org/api/option"

	"github.com/profilekit/profilekit/internal/fakecloud"
	"github.com/profilekit/profilekit/plugins/workloadidentity"
)

// These tests run the wrapper around google.golang.org/api/iam/v1 against a
// local server that speaks Google IAM's JSON protocol (fakecloud.Google).

// startGoogle starts the server, holding gsa with policy p, and returns it
// with the IAM of a real API client pointed at it.
func startGoogle(t *testing.T, p fakecloud.GooglePolicy) (*fakecloud.Google, workloadidentity.IAM) {
	t.Helper()
	srv := fakecloud.NewGoogle(t)
	srv.AddAccount(resource, p)
	s, err := iam.NewService(t.Context(), option.WithEndpoint(srv.URL+"/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatalf("Google IAM client: %v", err)
	}
	return srv, workloadidentity.NewIAM(s)
}

// bindings returns the bindings of a policy the client read, in the
// server's form.
func bindings(p *iam.Policy) []fakecloud.GoogleBinding {
	var out []fakecloud.GoogleBinding
	for _, b := range p.Bindings {
		fb := fakecloud.GoogleBinding{Role: b.Role, Members: b.Members}
		if c := b.Condition; c != nil {
			fb.Condition = &fakecloud.GoogleExpr{Expression: c.Expression, Title: c.Title, Description: c.Description}
		}
		out = append(out, fb)
	}
	return out
}

var (
	tokenCreator = fakecloud.GoogleBinding{Role: "roles/iam.serviceAccountTokenCreator", Members: []string{admin}}
	// onWeekdays is someone else's conditional binding, which only a
	// version 3 read returns and a write must keep.
	onWeekdays = fakecloud.GoogleBinding{Role: workloadidentity.RoleWorkloadIdentityUser, Members: []string{"serviceAccount:proj-123.svc.id.goog[ops/runner]"},
		Condition: &fakecloud.GoogleExpr{Title: "weekdays", Expression: `request.time.getDayOfWeek("Europe/Berlin") < 5`}}
)

func TestSDKGooglePolicyLifecycle(t *testing.T) {
	srv, c := startGoogle(t, fakecloud.GooglePolicy{Bindings: []fakecloud.GoogleBinding{tokenCreator, onWeekdays}})
	member := workloadidentity.Member("proj-123.svc.id.goog", "team-a", "default-editor")
	ours := fakecloud.GoogleBinding{Role: workloadidentity.RoleWorkloadIdentityUser, Members: []string{member}}
	start := srv.Policy(resource)

	first, err := c.Policy(t.Context(), resource)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	t.Run("a read returns the conditional binding and the etag, as version 3", func(t *testing.T) {
		if diff := cmp.Diff(start.Bindings, bindings(first)); diff != "" {
			t.Errorf("bindings (-want +got):\n%s", diff)
		}
		if first.Etag != start.Etag || first.Version != 3 {
			t.Errorf("etag %q version %d, want %q and 3", first.Etag, first.Version, start.Etag)
		}
	})

	t.Run("a write with the etag read replaces the policy and keeps the condition", func(t *testing.T) {
		if !workloadidentity.Grant(first, workloadidentity.RoleWorkloadIdentityUser, []string{member}) {
			t.Fatal("Grant changed nothing")
		}
		if err := c.SetPolicy(t.Context(), resource, first); err != nil {
			t.Fatalf("write: %v", err)
		}
		got := srv.Policy(resource)
		if diff := cmp.Diff([]fakecloud.GoogleBinding{tokenCreator, onWeekdays, ours}, got.Bindings); diff != "" {
			t.Errorf("bindings the server holds (-want +got):\n%s", diff)
		}
		if got.Etag == start.Etag {
			t.Errorf("etag %q did not change on write", got.Etag)
		}
	})

	t.Run("a write with the etag of an older read is a concurrent change and writes nothing", func(t *testing.T) {
		before := srv.Policy(resource)
		stale := &iam.Policy{Etag: start.Etag, Version: 3}
		err := c.SetPolicy(t.Context(), resource, stale)
		if !errors.Is(err, workloadidentity.ErrConcurrentChange) {
			t.Fatalf("write with a stale etag: %v, want ErrConcurrentChange", err)
		}
		if diff := cmp.Diff(before, srv.Policy(resource)); diff != "" {
			t.Errorf("policy changed by a refused write (-want +got):\n%s", diff)
		}
	})

	t.Run("removing our member leaves the others as they were", func(t *testing.T) {
		p, err := c.Policy(t.Context(), resource)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if !workloadidentity.Revoke(p, workloadidentity.RoleWorkloadIdentityUser, []string{member}) {
			t.Fatal("Revoke changed nothing")
		}
		if err := c.SetPolicy(t.Context(), resource, p); err != nil {
			t.Fatalf("write: %v", err)
		}
		if diff := cmp.Diff(start.Bindings, srv.Policy(resource).Bindings); diff != "" {
			t.Errorf("bindings the server holds (-want +got):\n%s", diff)
		}
	})

	t.Run("an account that does not exist is Google's 404", func(t *testing.T) {
		_, err := c.Policy(t.Context(), "projects/proj-123/serviceAccounts/gone@proj-123.iam.gserviceaccount.com")
		var ge *googleapi.Error
		if !errors.As(err, &ge) || ge.Code != http.StatusNotFound {
			t.Errorf("read of a missing account: %v, want a 404 googleapi.Error", err)
		}
	})

	t.Run("the client sends the calls and paths of the API", func(t *testing.T) {
		want := []string{"getIamPolicy 200", "setIamPolicy 200", "setIamPolicy 409", "getIamPolicy 200", "setIamPolicy 200", "getIamPolicy 404"}
		if diff := cmp.Diff(want, srv.Calls()); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		reqs := srv.Requests()
		wantURL := "/v1/" + resource + ":getIamPolicy?alt=json&options.requestedPolicyVersion=3&prettyPrint=false"
		if reqs[0].Method != http.MethodPost || reqs[0].URL != wantURL {
			t.Errorf("first request %s %s, want POST %s", reqs[0].Method, reqs[0].URL, wantURL)
		}
		if !strings.Contains(reqs[1].Body, `"etag":"`+start.Etag+`"`) {
			t.Errorf("setIamPolicy body %s does not carry the etag read, %s", reqs[1].Body, start.Etag)
		}
	})
	if err := srv.WriteFile("/tmp/evidence/sdk-gcp-requests.txt"); err != nil {
		t.Errorf("request log: %v", err)
	}
}

// TestSDKGoogleThrottled: Google IAM answers a caller over its quota with
// 429 and Retry-After; the generated client does not retry, so the wrapper
// waits as told and calls again.
func TestSDKGoogleThrottled(t *testing.T) {
	tests := []struct {
		reason string
		call   string
		do     func(context.Context, workloadidentity.IAM) error
	}{
		{
			reason: "a throttled read is read again",
			call:   "getIamPolicy",
			do: func(ctx context.Context, c workloadidentity.IAM) error {
				_, err := c.Policy(ctx, resource)
				return err
			},
		},
		{
			reason: "a throttled write is written again, with the same etag",
			call:   "setIamPolicy",
			do: func(ctx context.Context, c workloadidentity.IAM) error {
				p, err := c.Policy(ctx, resource)
				if err != nil {
					return err
				}
				workloadidentity.Grant(p, workloadidentity.RoleWorkloadIdentityUser, []string{"serviceAccount:proj-123.svc.id.goog[team-a/default-editor]"})
				return c.SetPolicy(ctx, resource, p)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			srv, c := startGoogle(t, fakecloud.GooglePolicy{Bindings: []fakecloud.GoogleBinding{tokenCreator}})
			srv.Fail(tt.call, fakecloud.Throttle)
			start := time.Now()
			if err := tt.do(t.Context(), c); err != nil {
				t.Fatalf("call: %v", err)
			}
			var throttled []fakecloud.Request
			for _, r := range srv.Requests() {
				if r.Call == tt.call {
					throttled = append(throttled, r)
				}
			}
			if len(throttled) != 2 || throttled[0].Status != http.StatusTooManyRequests || throttled[1].Status != http.StatusOK {
				t.Fatalf("%s calls %v, want one throttled and one answered", tt.call, srv.Calls())
			}
			if diff := cmp.Diff(throttled[0].Body, throttled[1].Body); diff != "" {
				t.Errorf("the call made again differs (-first +again):\n%s", diff)
			}
			if took := time.Since(start); took < 900*time.Millisecond {
				t.Errorf("took %v: Retry-After: 1 was not waited for", took)
			}
		})
	}
}

// TestSDKGoogleTimeout: a server that never answers; the call ends with the
// context's deadline, soon after it.
func TestSDKGoogleTimeout(t *testing.T) {
	for _, call := range []string{"getIamPolicy", "setIamPolicy"} {
		t.Run(call, func(t *testing.T) {
			srv, c := startGoogle(t, fakecloud.GooglePolicy{Bindings: []fakecloud.GoogleBinding{tokenCreator}})
			srv.Fail(call, fakecloud.Hang)
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			var err error
			if call == "getIamPolicy" {
				_, err = c.Policy(ctx, resource)
			} else {
				err = c.SetPolicy(ctx, resource, &iam.Policy{Etag: srv.Policy(resource).Etag})
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
		})
	}
}
