package main

// This file records what test hosts under a deployment's RBAC
// (rbac_chart_test.go) send, as the API server's authorizer sees it, and
// which of the deployment's rules each request needed. There is no audit
// log to read: a round tripper around the host's transport takes every
// request's attributes (verb, API group, resource, namespace, name) from
// its path, as the API server does, and its answer. Some rights are checked
// inside a write rather than as a request of their own, and are read from
// its body: bind on the role a RoleBinding refers to, escalate for a Role,
// and update on an owner's finalizers for an owner reference that blocks
// the owner's deletion (the test API server runs
// OwnerReferencesPermissionEnforcement).
//
// Every test's hosts add to one record of the package's test binary, so
// that TestMain can report, once every test ran, each rule the chart
// granted in some test and no request of any test needed (rbac_unused_test.go).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// grant is one verb on one resource (resource/subresource) of an API group,
// on the objects of one name or of any, that a role bound to the host
// grants: cluster-wide, or in one namespace.
type grant struct {
	// role is the role as the chart names it: "ClusterRole profilekit".
	role string
	// namespace is where a RoleBinding grants the role; "" cluster-wide.
	namespace                   string
	group, resource, verb, name string
}

// key names the grant the same way in every test, whatever namespace the
// test's configuration puts the role in and whatever names it gives the
// objects a rule is restricted to (a storage instance's Secret): those are
// one grant, "by name". The roles a host may bind are told apart: which
// roles it may hand out is the point of those rules.
func (g grant) key() string {
	res := g.resource
	if g.group != "" {
		res += "." + g.group
	}
	switch {
	case g.name != "" && g.verb == "bind":
		res += " " + g.name
	case g.name != "":
		res += " by name"
	}
	return g.role + ": " + g.verb + " " + res
}

// grantsOf splits rules into grants.
func grantsOf(role, namespace string, rules []rbacv1.PolicyRule) []grant {
	var out []grant
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					for _, n := range names {
						out = append(out, grant{role: role, namespace: namespace, group: g, resource: res, verb: v, name: n})
					}
				}
			}
		}
	}
	return out
}

// rbacTrace names the environment variable that, set, makes the recorder
// print every request with the API server's answer, to see what a host
// sent: PROFILEKIT_RBAC_TRACE=1 go test -v -run X ./examples/host/.
const rbacTrace = "PROFILEKIT_RBAC_TRACE"

// allowedToEveryone are requests the cluster's default roles allow every
// authenticated user (system:basic-user), which no deployment grants.
var allowedToEveryone = []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews"}

// useRecord is what every deployment in the test binary granted and which
// of it a request needed, by grant key.
type useRecord struct {
	mu      sync.Mutex
	granted map[string]bool
	used    map[string]bool
}

// rbacUse is the test binary's record; TestMain reads it when the tests
// are done.
var rbacUse = &useRecord{granted: map[string]bool{}, used: map[string]bool{}}

// deployment starts the record of one host's deployment with its grants.
// Unless counted, the grants are left out of the rules no test used: a
// test that runs a configuration of its own under a deployment made for
// another checks only that its requests are allowed.
func (u *useRecord) deployment(grants []grant, counted bool) *deploymentUse {
	if !counted {
		u = &useRecord{granted: map[string]bool{}, used: map[string]bool{}}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, g := range grants {
		u.granted[g.key()] = true
	}
	return &deploymentUse{record: u, grants: grants}
}

// deploymentUse records the requests of the hosts under one deployment's
// RBAC.
type deploymentUse struct {
	record *useRecord
	grants []grant

	// settling is set while the API server starts again: until its
	// authorizer has read the cluster's RBAC it forbids every request,
	// which settlingForbidden counts instead of failing the test.
	settling          atomic.Bool
	settlingForbidden atomic.Int64

	mu        sync.Mutex
	forbidden []string
	ungranted []string
}

// failures returns the requests the API server forbade, and those it
// allowed that no grant of the deployment covers.
func (d *deploymentUse) failures() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, f := range slices.Compact(slices.Sorted(slices.Values(d.forbidden))) {
		out = append(out, "Forbidden: "+f)
	}
	for _, f := range slices.Compact(slices.Sorted(slices.Values(d.ungranted))) {
		out = append(out, "allowed, but granted by no rule of the deployment: "+f)
	}
	return out
}

// wrap is a rest.Config transport wrapper that records every request.
func (d *deploymentUse) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		a, ok := attributesOf(r)
		var inside []attributes
		if ok && r.Body != nil && r.Method != http.MethodGet {
			body, err := io.ReadAll(r.Body)
			_ = r.Body.Close()
			if err != nil {
				return nil, err
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
			inside = checkedInside(a, body)
		}
		resp, err := rt.RoundTrip(r)
		if os.Getenv(rbacTrace) != "" && ok && err == nil {
			fmt.Fprintf(os.Stderr, "rbac-trace %d %s %s\n", resp.StatusCode, a, r.URL.RawQuery)
		}
		if !ok || err != nil {
			return resp, err
		}
		if resp.StatusCode == http.StatusForbidden {
			if msg, denied := deniedByRBAC(resp); denied {
				if d.settling.Load() {
					d.settlingForbidden.Add(1)
					return resp, err
				}
				d.mu.Lock()
				d.forbidden = append(d.forbidden, a.String()+": "+msg)
				d.mu.Unlock()
				return resp, err
			}
		}
		if a.verb == "watch" && r.URL.Query().Get("sendInitialEvents") == "true" {
			// A watch-list stands for the list it replaces: an informer
			// lists, then watches, where the API server does not stream.
			d.use(attributes{verb: "list", group: a.group, resource: a.resource, namespace: a.namespace, name: a.name})
		}
		if a.verb == "patch" && resp.StatusCode == http.StatusCreated {
			// A patch (server-side apply) that creates the object is
			// authorized for create too.
			d.use(attributes{verb: "create", group: a.group, resource: a.resource, namespace: a.namespace, name: a.name})
		}
		if !d.use(a) && !slices.Contains(allowedToEveryone, a.resource) {
			d.mu.Lock()
			d.ungranted = append(d.ungranted, a.String())
			d.mu.Unlock()
		}
		for _, in := range inside {
			// The API server lets the write through without the right when
			// the host holds every right of the role already.
			d.use(in)
		}
		return resp, err
	})
}

// deniedByRBAC reports whether a 403 answer is the authorizer's, and its
// message. Admission can answer 403 too (a namespace being deleted, a
// quota), which says nothing about the host's rights.
func deniedByRBAC(resp *http.Response) (string, bool) {
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return err.Error(), true
	}
	var status metav1.Status
	if json.Unmarshal(body, &status) != nil {
		return string(body), true
	}
	return status.Message, strings.Contains(status.Message, " cannot ")
}

// use marks the grants that allow a, of the narrowest that do: a grant in
// the request's namespace over a cluster-wide one, one of the object's name
// over one of any. It reports whether any grant allows a.
func (d *deploymentUse) use(a attributes) bool {
	rank := func(g grant) int {
		switch {
		case g.namespace != "":
			return 0
		case g.name != "":
			return 1
		}
		return 2
	}
	best := 3
	var keys []string
	for _, g := range d.grants {
		if g.verb != a.verb || g.group != a.group || g.resource != a.resource ||
			g.namespace != "" && g.namespace != a.namespace || g.name != "" && g.name != a.name {
			continue
		}
		switch r := rank(g); {
		case r < best:
			best, keys = r, []string{g.key()}
		case r == best:
			keys = append(keys, g.key())
		}
	}
	d.record.mu.Lock()
	defer d.record.mu.Unlock()
	for _, k := range keys {
		d.record.used[k] = true
	}
	return len(keys) > 0
}

// unused returns the grants of every deployment that no request needed,
// and the used ones, by key.
func (u *useRecord) unused() (unused, used []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for k := range u.granted {
		if u.used[k] {
			used = append(used, k)
		} else {
			unused = append(unused, k)
		}
	}
	slices.Sort(unused)
	slices.Sort(used)
	return unused, used
}

func (u *useRecord) String() string {
	unused, used := u.unused()
	return fmt.Sprintf("%d rules granted, %d used, %d unused", len(used)+len(unused), len(used), len(unused))
}
