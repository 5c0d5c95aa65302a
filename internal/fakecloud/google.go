package fakecloud

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// GooglePolicy is the IAM policy of a Google resource as the API's JSON
// carries it.
type GooglePolicy struct {
	Version  int64           `json:"version,omitempty"`
	Etag     string          `json:"etag,omitempty"`
	Bindings []GoogleBinding `json:"bindings,omitempty"`
}

// GoogleBinding grants a role to members, under a condition when set.
type GoogleBinding struct {
	Role      string      `json:"role"`
	Members   []string    `json:"members"`
	Condition *GoogleExpr `json:"condition,omitempty"`
}

// GoogleExpr is the condition of a binding.
type GoogleExpr struct {
	Expression  string `json:"expression"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

func (p GooglePolicy) clone() GooglePolicy {
	out := GooglePolicy{Version: p.Version, Etag: p.Etag}
	for _, b := range p.Bindings {
		c := GoogleBinding{Role: b.Role, Members: slices.Clone(b.Members)}
		if b.Condition != nil {
			e := *b.Condition
			c.Condition = &e
		}
		out.Bindings = append(out.Bindings, c)
	}
	return out
}

func (p GooglePolicy) conditional() bool {
	return slices.ContainsFunc(p.Bindings, func(b GoogleBinding) bool { return b.Condition != nil })
}

// Google serves the IAM policy methods of Google IAM's service accounts
// (projects.serviceAccounts.getIamPolicy and setIamPolicy) as the
// google.golang.org/api/iam/v1 client sends them:
//
//	POST /v1/projects/<project>/serviceAccounts/<email>:getIamPolicy?options.requestedPolicyVersion=3
//	POST /v1/projects/<project>/serviceAccounts/<email>:setIamPolicy   {"policy": {...}}
//
// The project may be "-", as the API allows. Like the API, it gives every
// policy an etag that changes on each write, refuses a setIamPolicy whose
// etag is not the current one with 409 ABORTED (one without an etag
// overwrites), answers 404 NOT_FOUND for an account it does not hold, drops
// bindings left with no members, and needs policy version 3 to read or write
// conditional bindings. Errors are Google's JSON error objects.
type Google struct {
	server

	mu       sync.Mutex
	accounts map[string]*googleAccount // by email
	writes   uint64
}

type googleAccount struct {
	project string
	policy  GooglePolicy
}

// NewGoogle starts a Google IAM server that holds no service account; point
// the client at its URL (option.WithEndpoint(g.URL + "/")).
func NewGoogle(t testing.TB) *Google {
	g := &Google{accounts: map[string]*googleAccount{}}
	g.start(t, g, false)
	return g
}

// AddAccount adds the service account of resource
// (projects/<project>/serviceAccounts/<email>) with policy p, to which it
// gives a fresh etag.
func (g *Google) AddAccount(resource string, p GooglePolicy) {
	project, email, ok := googleResource(resource)
	if !ok {
		panic("fakecloud: not a service account resource: " + resource)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	a := &googleAccount{project: project, policy: p.clone()}
	g.accounts[email] = a
	g.store(a, a.policy)
}

// Policy returns the policy the server holds for resource.
func (g *Google) Policy(resource string) GooglePolicy {
	_, email, _ := googleResource(resource)
	g.mu.Lock()
	defer g.mu.Unlock()
	a, ok := g.accounts[email]
	if !ok {
		return GooglePolicy{}
	}
	return a.policy.clone()
}

// Write changes the policy of resource as another writer would, through the
// API: the etag changes.
func (g *Google) Write(resource string, edit func(*GooglePolicy)) {
	_, email, _ := googleResource(resource)
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.accounts[email]
	p := a.policy.clone()
	edit(&p)
	g.store(a, p)
}

// store makes p the account's policy with a new etag, as a write does.
func (g *Google) store(a *googleAccount, p GooglePolicy) {
	g.writes++
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], g.writes)
	p.Etag = base64.StdEncoding.EncodeToString(append([]byte("Bw"), n[:]...))
	p.Bindings = slices.DeleteFunc(p.Bindings, func(b GoogleBinding) bool { return len(b.Members) == 0 })
	p.Version = 1
	if p.conditional() {
		p.Version = 3
	}
	a.policy = p
}

// googleResource splits projects/<project>/serviceAccounts/<email>.
func googleResource(r string) (project, email string, ok bool) {
	parts := strings.Split(r, "/")
	if len(parts) != 4 || parts[0] != "projects" || parts[2] != "serviceAccounts" || parts[1] == "" || parts[3] == "" {
		return "", "", false
	}
	return parts[1], parts[3], true
}

func (g *Google) call(r *http.Request, _ []byte) string {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/")
	if !ok || r.Method != http.MethodPost {
		return ""
	}
	_, verb, _ := strings.Cut(rest, ":")
	switch verb {
	case "getIamPolicy", "setIamPolicy":
		return verb
	}
	return ""
}

func (g *Google) answer(call string, r *http.Request, body []byte) reply {
	resource, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/"), ":")
	project, email, ok := googleResource(resource)
	if !ok {
		return googleError(http.StatusBadRequest, "INVALID_ARGUMENT", "badRequest", fmt.Sprintf("Invalid resource name %q.", resource))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	a, ok := g.accounts[email]
	if !ok || (project != "-" && project != a.project) {
		return googleError(http.StatusNotFound, "NOT_FOUND", "notFound", fmt.Sprintf("Service account %s does not exist.", resource))
	}
	if call == "getIamPolicy" {
		return g.getPolicy(a, r, body)
	}
	return g.setPolicy(a, body)
}

func (g *Google) getPolicy(a *googleAccount, r *http.Request, body []byte) reply {
	var req struct {
		Options struct {
			RequestedPolicyVersion int64 `json:"requestedPolicyVersion"`
		} `json:"options"`
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return googleError(http.StatusBadRequest, "INVALID_ARGUMENT", "badRequest", "Invalid JSON payload received. "+err.Error())
		}
	}
	version := req.Options.RequestedPolicyVersion
	if q := r.URL.Query().Get("options.requestedPolicyVersion"); q != "" {
		v, err := strconv.ParseInt(q, 10, 64)
		if err != nil {
			return googleError(http.StatusBadRequest, "INVALID_ARGUMENT", "badRequest", fmt.Sprintf("Invalid value at 'options.requested_policy_version' (TYPE_INT32), %q", q))
		}
		version = v
	}
	if a.policy.conditional() && version < 3 {
		return googleError(http.StatusBadRequest, "INVALID_ARGUMENT", "badRequest", "The policy has conditional role bindings; request policy version 3 to read it.")
	}
	return googleJSON(a.policy)
}

func (g *Google) setPolicy(a *googleAccount, body []byte) reply {
	var req struct {
		Policy     *GooglePolicy `json:"policy"`
		UpdateMask string        `json:"updateMask"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return googleError(http.StatusBadRequest, "INVALID_ARGUMENT", "badRequest", "Invalid JSON payload received. "+err.Error())
	}
	if req.Policy == nil {
		return googleError(http.StatusBadRequest, "INVALID_ARGUMENT", "badRequest", "Request contains an invalid argument: policy is required.")
	}
	p := *req.Policy
	if p.Etag != "" && p.Etag != a.policy.Etag {
		return googleError(http.StatusConflict, "ABORTED", "aborted", "There were concurrent policy changes. Please retry the whole read-modify-write with exponential backoff.")
	}
	if p.conditional() && p.Version < 3 {
		return googleError(http.StatusBadRequest, "INVALID_ARGUMENT", "badRequest", "Conditional role bindings need policy version 3.")
	}
	for _, b := range p.Bindings {
		if !strings.HasPrefix(b.Role, "roles/") && !strings.HasPrefix(b.Role, "projects/") && !strings.HasPrefix(b.Role, "organizations/") {
			return googleError(http.StatusBadRequest, "INVALID_ARGUMENT", "badRequest", fmt.Sprintf("Role %s is not supported for this resource.", b.Role))
		}
	}
	g.store(a, p.clone())
	return googleJSON(a.policy)
}

func (g *Google) throttled() reply {
	rep := googleError(http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "rateLimitExceeded", "Quota exceeded for quota metric 'Requests' of service 'iam.googleapis.com'.")
	rep.header.Set("Retry-After", "1")
	return rep
}

func googleJSON(v any) reply {
	b, err := json.Marshal(v)
	if err != nil {
		return googleError(http.StatusInternalServerError, "INTERNAL", "backendError", err.Error())
	}
	return reply{status: http.StatusOK, header: http.Header{"Content-Type": {"application/json; charset=UTF-8"}}, body: b}
}

// googleError is Google's JSON error object.
func googleError(code int, status, reason, msg string) reply {
	type item struct {
		Message string `json:"message"`
		Domain  string `json:"domain"`
		Reason  string `json:"reason"`
	}
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Errors  []item `json:"errors"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	e.Error.Code, e.Error.Message, e.Error.Status = code, msg, status
	e.Error.Errors = []item{{Message: msg, Domain: "global", Reason: reason}}
	b, _ := json.Marshal(e)
	return reply{status: code, header: http.Header{"Content-Type": {"application/json; charset=UTF-8"}}, body: b}
}
