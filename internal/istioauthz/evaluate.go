package istioauthz

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	securityv1beta1 "istio.io/api/security/v1beta1"
)

// Request is what a workload's sidecar knows of a request.
type Request struct {
	// Principal is the source workload's identity from mutual TLS, such as
	// cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account;
	// empty for a plain-text request.
	Principal string
	// Namespace is the source workload's namespace, from the same
	// certificate; empty for a plain-text request.
	Namespace string
	// Headers are the request's headers by name, in any case.
	Headers map[string]string
	// Claims are the claims of the JWT that a RequestAuthentication
	// verified, each a list (a string claim is a list of one).
	Claims map[string][]string
	// Method is the HTTP method, such as GET.
	Method string
	// Path is the request's path; a query string is not part of it.
	Path string
}

// Decision is whether a request is allowed, and why.
type Decision struct {
	// Allowed is true when the workload would receive the request.
	Allowed bool
	// Reason names the policy and rule that decided, or the default.
	Reason string
}

// Evaluate decides whether the policies of a workload allow r. It fails,
// deciding nothing, when a policy uses an action, field or condition key
// that the package does not know; every policy is checked whether or not
// the request would reach it.
func Evaluate(policies []*securityv1beta1.AuthorizationPolicy, r Request) (Decision, error) {
	var errs []error
	for i, p := range policies {
		if err := check(p); err != nil {
			errs = append(errs, fmt.Errorf("policy %d: %w", i, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Decision{}, err
	}
	allows := 0
	for i, p := range policies {
		if p.GetAction() != securityv1beta1.AuthorizationPolicy_DENY {
			continue
		}
		if j, ok := matchPolicy(p, r); ok {
			return Decision{Reason: fmt.Sprintf("DENY policy %d, rule %d", i, j)}, nil
		}
	}
	for i, p := range policies {
		if p.GetAction() != securityv1beta1.AuthorizationPolicy_ALLOW {
			continue
		}
		allows++
		if j, ok := matchPolicy(p, r); ok {
			return Decision{Allowed: true, Reason: fmt.Sprintf("ALLOW policy %d, rule %d", i, j)}, nil
		}
	}
	if allows == 0 {
		return Decision{Allowed: true, Reason: "no ALLOW policy"}, nil
	}
	return Decision{Reason: "no ALLOW rule matches"}, nil
}

// matchPolicy returns the index of the first rule of p that r matches.
func matchPolicy(p *securityv1beta1.AuthorizationPolicy, r Request) (int, bool) {
	for j, rule := range p.GetRules() {
		if matchRule(rule, r) {
			return j, true
		}
	}
	return 0, false
}

func matchRule(rule *securityv1beta1.Rule, r Request) bool {
	if len(rule.GetFrom()) > 0 && !anyOf(rule.GetFrom(), func(f *securityv1beta1.Rule_From) bool { return matchSource(f.GetSource(), r) }) {
		return false
	}
	if len(rule.GetTo()) > 0 && !anyOf(rule.GetTo(), func(t *securityv1beta1.Rule_To) bool { return matchOperation(t.GetOperation(), r) }) {
		return false
	}
	for _, c := range rule.GetWhen() {
		if !matchCondition(c, r) {
			return false
		}
	}
	return true
}

func anyOf[T any](items []T, f func(T) bool) bool {
	for _, it := range items {
		if f(it) {
			return true
		}
	}
	return false
}

func matchSource(s *securityv1beta1.Source, r Request) bool {
	return field(s.GetPrincipals(), s.GetNotPrincipals(), value(r.Principal)) &&
		field(s.GetNamespaces(), s.GetNotNamespaces(), value(r.Namespace))
}

func matchOperation(o *securityv1beta1.Operation, r Request) bool {
	path, _, _ := strings.Cut(r.Path, "?")
	return field(o.GetMethods(), o.GetNotMethods(), value(r.Method)) &&
		field(o.GetPaths(), o.GetNotPaths(), value(path))
}

func matchCondition(c *securityv1beta1.Condition, r Request) bool {
	a, _ := attribute(c.GetKey(), r) // check has refused unknown keys
	return field(c.GetValues(), c.GetNotValues(), a)
}

// field reports whether an attribute matches a field and its not-form: one
// of values (when there are any) and none of notValues.
func field(values, notValues []string, a attr) bool {
	if len(values) > 0 && !anyOf(values, a.matches) {
		return false
	}
	return !anyOf(notValues, a.matches)
}

// check refuses what Evaluate does not know: it could only guess at it.
func check(p *securityv1beta1.AuthorizationPolicy) error {
	switch p.GetAction() {
	case securityv1beta1.AuthorizationPolicy_ALLOW, securityv1beta1.AuthorizationPolicy_DENY:
	default:
		return fmt.Errorf("action %s is not supported", p.GetAction())
	}
	errs := []error{known(p, "selector", "action", "rules")}
	for i, rule := range p.GetRules() {
		at := fmt.Sprintf("rules[%d]", i)
		errs = append(errs, known(rule, "from", "to", "when"))
		for j, f := range rule.GetFrom() {
			if len(fields(f.GetSource())) == 0 {
				errs = append(errs, fmt.Errorf("%s.from[%d]: a source must set a field", at, j))
			}
			errs = append(errs, known(f, "source"), known(f.GetSource(), "principals", "not_principals", "namespaces", "not_namespaces"))
		}
		for j, t := range rule.GetTo() {
			if len(fields(t.GetOperation())) == 0 {
				errs = append(errs, fmt.Errorf("%s.to[%d]: an operation must set a field", at, j))
			}
			errs = append(errs, known(t, "operation"), known(t.GetOperation(), "methods", "not_methods", "paths", "not_paths"))
		}
		for j, c := range rule.GetWhen() {
			if _, err := attribute(c.GetKey(), Request{}); err != nil {
				errs = append(errs, fmt.Errorf("%s.when[%d]: %w", at, j, err))
			}
			if len(c.GetValues())+len(c.GetNotValues()) == 0 {
				errs = append(errs, fmt.Errorf("%s.when[%d]: a condition needs values or notValues", at, j))
			}
			errs = append(errs, known(c, "key", "values", "not_values"))
		}
	}
	return errors.Join(errs...)
}

// fields returns the names of the fields set in m.
func fields(m interface{ ProtoReflect() protoreflect.Message }) []string {
	if m == nil || !m.ProtoReflect().IsValid() {
		return nil
	}
	var names []string
	m.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		names = append(names, string(fd.Name()))
		return true
	})
	return names
}

// known fails when m sets a field other than allowed.
func known(m interface{ ProtoReflect() protoreflect.Message }, allowed ...string) error {
	var errs []error
	for _, name := range fields(m) {
		ok := false
		for _, a := range allowed {
			ok = ok || a == name
		}
		if !ok {
			errs = append(errs, fmt.Errorf("%s field %s is not supported", m.ProtoReflect().Descriptor().Name(), name))
		}
	}
	return errors.Join(errs...)
}
