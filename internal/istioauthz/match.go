package istioauthz

import (
	"fmt"
	"strings"
)

// attr is a request's attribute: none, one value or, for a claim, a list.
type attr struct {
	values []string
	// present is true when the request has the attribute at all; a header
	// may be present with an empty value.
	present bool
	// header marks a request header, whose presence match ("*") holds for
	// any value, the empty one included, as Envoy's present_match does.
	header bool
}

// value is an attribute that is present when not empty.
func value(v string) attr {
	if v == "" {
		return attr{}
	}
	return attr{values: []string{v}, present: true}
}

// matches reports whether pattern matches the attribute: any of its values.
func (a attr) matches(pattern string) bool {
	if !a.present {
		return false
	}
	if pattern == "*" && a.header {
		return true
	}
	for _, v := range a.values {
		if match(pattern, v) {
			return true
		}
	}
	return false
}

// match is Istio's string match: "*" any value that is not empty, "*abc"
// a suffix, "abc*" a prefix, anything else the exact value. A leading "*"
// is read first, so "*abc*" is the suffix "abc*".
func match(pattern, v string) bool {
	switch {
	case pattern == "*":
		return v != ""
	case strings.HasPrefix(pattern, "*"):
		return strings.HasSuffix(v, pattern[1:])
	case strings.HasSuffix(pattern, "*"):
		return strings.HasPrefix(v, pattern[:len(pattern)-1])
	default:
		return v == pattern
	}
}

// attribute returns the attribute of r that a condition key names, or an
// error for a key the package does not know.
func attribute(key string, r Request) (attr, error) {
	if name, ok := bracketed(key, "request.headers"); ok {
		for k, v := range r.Headers {
			if strings.EqualFold(k, name) {
				return attr{values: []string{v}, present: true, header: true}, nil
			}
		}
		return attr{header: true}, nil
	}
	if name, ok := bracketed(key, "request.auth.claims"); ok {
		if strings.Contains(name, "][") {
			return attr{}, fmt.Errorf("condition key %q: nested claims are not supported", key)
		}
		c, ok := r.Claims[name]
		return attr{values: c, present: ok}, nil
	}
	switch key {
	case "source.namespace":
		return value(r.Namespace), nil
	case "source.principal":
		return value(r.Principal), nil
	}
	return attr{}, fmt.Errorf("condition key %q is not supported", key)
}

// bracketed returns the name in key = prefix[name].
func bracketed(key, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(key, prefix+"[")
	if !ok || !strings.HasSuffix(rest, "]") || len(rest) < 2 {
		return "", false
	}
	return strings.TrimSuffix(rest, "]"), true
}
