package workloadidentity_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
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
		if !errors.As(err, &ge) || ge.Code != http.StatusNotFound || !errors.Is(err, workloadidentity.ErrNoAccount) {
			t.Errorf("read of a missing account: %v, want a 404 googleapi.Error that is ErrNoAccount", err)
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

// A call throttled on every try is made four times (the first and three
// more), then fails with the throttling answer.
func TestSDKGoogleThrottledPastItsRetries(t *testing.T) {
	srv, c := startGoogle(t, fakecloud.GooglePolicy{Bindings: []fakecloud.GoogleBinding{tokenCreator}})
	srv.Fail("getIamPolicy", fakecloud.Throttle, fakecloud.Throttle, fakecloud.Throttle, fakecloud.Throttle, fakecloud.Throttle)
	_, err := c.Policy(t.Context(), resource)
	var ge *googleapi.Error
	if !errors.As(err, &ge) || ge.Code != http.StatusTooManyRequests {
		t.Errorf("Policy: %v, want Google's 429", err)
	}
	if want := []string{"getIamPolicy 429", "getIamPolicy 429", "getIamPolicy 429", "getIamPolicy 429"}; !slices.Equal(srv.Calls(), want) {
		t.Errorf("calls %v, want %v", srv.Calls(), want)
	}
}

// Only Google's answers to a write that lost a race are a concurrent
// change; a write it refuses for what it holds is its own error.
func TestSDKGoogleRefusedWriteIsNotAConcurrentChange(t *testing.T) {
	_, c := startGoogle(t, fakecloud.GooglePolicy{Bindings: []fakecloud.GoogleBinding{tokenCreator}})
	p, err := c.Policy(t.Context(), resource)
	if err != nil {
		t.Fatal(err)
	}
	workloadidentity.Grant(p, "workloadIdentityUser", []string{"serviceAccount:proj-123.svc.id.goog[team-a/default-editor]"})
	err = c.SetPolicy(t.Context(), resource, p)
	var ge *googleapi.Error
	if !errors.As(err, &ge) || ge.Code != http.StatusBadRequest || errors.Is(err, workloadidentity.ErrConcurrentChange) {
		t.Errorf("SetPolicy of a role Google does not know: %v, want its 400, not ErrConcurrentChange", err)
	}
}

// The wait before a throttled call is made again is the answer's
// Retry-After, when it says one: none at all for 0, two seconds for 2, not
// the backoff's one; an answer that says none gets the backoff.
func TestSDKGoogleWaitsAsTold(t *testing.T) {
	for _, c := range []struct {
		retryAfter string
		atLeast    time.Duration
		below      time.Duration
	}{
		{"0", 0, 500 * time.Millisecond},
		{"2", 1900 * time.Millisecond, 3 * time.Second},
		{"soon", 900 * time.Millisecond, 1900 * time.Millisecond},
	} {
		t.Run("Retry-After: "+c.retryAfter, func(t *testing.T) {
			srv, cl := startGoogle(t, fakecloud.GooglePolicy{Bindings: []fakecloud.GoogleBinding{tokenCreator}})
			srv.RetryAfter(c.retryAfter)
			srv.Fail("getIamPolicy", fakecloud.Throttle)
			start := time.Now()
			if _, err := cl.Policy(t.Context(), resource); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took < c.atLeast || took >= c.below {
				t.Errorf("read again after %v, want at least %v and below %v", took, c.atLeast, c.below)
			}
		})
	}
}

// The default IAM makes its client on first use: credentials that do not
// load are each call's error, never a panic.
func TestDefaultIAMWithoutCredentials(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "no-such-key.json"))
	c := workloadidentity.DefaultIAM()
	_, errRead := c.Policy(t.Context(), resource)
	errWrite := c.SetPolicy(t.Context(), resource, &iam.Policy{})
	for call, err := range map[string]error{"Policy": errRead, "SetPolicy": errWrite} {
		if err == nil || !strings.Contains(err.Error(), "Google IAM client") || !strings.Contains(err.Error(), "no-such-key.json") {
			t.Errorf("%s: %v, want the client's error naming the credentials file", call, err)
		}
	}
}
