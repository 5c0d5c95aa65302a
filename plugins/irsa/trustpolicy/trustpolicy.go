// Package trustpolicy edits IAM role trust policies: it adds the subjects of
// Kubernetes service accounts for a cluster's OIDC provider to the statement
// whose Sid proves it is the plugin's for one Profile (StatementID), and
// removes that statement. Every other statement is someone else's and is
// kept byte for byte; the policy is written without HTML escaping. Its
// functions are pure; the irsa plugin reads and writes the policies.
//
// # Stability
//
// Experimental: the irsa plugin's own editor, exported so that it can be
// fuzzed and tested on its own. Its functions may change in any minor
// release.
package trustpolicy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// The parts of a role trust policy the plugin reads and writes.
const (
	// ActionAssumeWithWebIdentity is the action a service account's projected
	// token uses to assume the role.
	ActionAssumeWithWebIdentity = "sts:AssumeRoleWithWebIdentity"
	// DefaultAudience is the audience of the projected token on EKS.
	DefaultAudience = "sts.amazonaws.com"
	// DefaultMaxPolicySize is IAM's default limit for a role trust policy,
	// in characters without white space.
	DefaultMaxPolicySize = 2048

	opEquals = "StringEquals"
	opLike   = "StringLike"
)

// Edit says which subjects to add to a trust policy, and which statement
// of it is the plugin's.
type Edit struct {
	// Provider is the ARN of the cluster's IAM OIDC provider,
	// arn:aws:iam::<account>:oidc-provider/<issuer>.
	Provider string
	// Audience is the token audience a new statement requires.
	Audience string
	// Subjects are system:serviceaccount:<namespace>:<name> values, or
	// patterns when Wildcard is set.
	Subjects []string
	// Namespace is the Profile's namespace, which the subjects belong to; it
	// names the statement that holds them (see ID).
	Namespace string
	// Wildcard matches the subjects with StringLike instead of StringEquals,
	// in one statement that every Profile shares.
	Wildcard bool
	// Adopt claims a statement without a Sid that has exactly the form the
	// plugin writes and names only these subjects (as the plugin's versions
	// before Sids wrote), instead of leaving it as someone else's.
	Adopt bool
	// MaxSize is the size limit of the policy in characters without white
	// space; 0 means DefaultMaxPolicySize.
	MaxSize int
}

// ID returns the Sid of the statement the edit adds to: StatementID of the
// provider and namespace, or WildcardStatementID.
func (e Edit) ID() string {
	if e.Wildcard {
		return WildcardStatementID(e.Provider)
	}
	return StatementID(e.Provider, e.Namespace)
}

// SizeError is a policy that would pass IAM's size limit.
type SizeError struct {
	Size, Limit int
}

// Error says by how much the policy is too large and what to do about it.
func (e *SizeError) Error() string {
	return fmt.Sprintf("trust policy would be %d characters, %d over the limit of %d; raise the role trust policy size quota, give the Profile its own role, or use subjects: wildcard",
		e.Size, e.Size-e.Limit, e.Limit)
}

// Issuer returns the issuer part of an OIDC provider ARN, the prefix of the
// condition keys (<issuer>:sub, <issuer>:aud).
func Issuer(provider string) (string, error) {
	_, issuer, ok := strings.Cut(provider, ":oidc-provider/")
	if !ok || issuer == "" || !strings.HasPrefix(provider, "arn:") {
		return "", fmt.Errorf("%q is not an IAM OIDC provider ARN (arn:aws:iam::<account>:oidc-provider/<issuer>)", provider)
	}
	return issuer, nil
}

// ProviderFromPolicy returns the OIDC provider of the first statement that
// lets a web identity assume the role, for roles set up by eksctl or by hand
// when the host names no provider.
func ProviderFromPolicy(doc string) (string, error) {
	p, err := parsePolicy(doc)
	if err != nil {
		return "", err
	}
	for _, s := range p.statements {
		if !s.allowsWebIdentity() {
			continue
		}
		for _, f := range s.federated() {
			if _, err := Issuer(f); err == nil {
				return f, nil
			}
		}
	}
	return "", errors.New("the trust policy has no statement for an OIDC provider; set oidcProvider in the host configuration")
}

// HasSubjects reports whether every subject of e may already assume the role
// through e's provider in doc, by a statement of ours or of someone else's.
func HasSubjects(doc string, e Edit) (bool, error) {
	if err := e.check(); err != nil {
		return false, err
	}
	p, err := parsePolicy(doc)
	if err != nil {
		return false, err
	}
	key, err := subKey(e.Provider)
	if err != nil {
		return false, err
	}
	return len(p.missing(e, key)) == 0, nil
}

// AddSubjects returns doc with e's subjects allowed to assume the role, and
// whether that changed it. Every statement and condition already there is
// kept byte for byte; a subject that some statement for the provider
// already names is not added again. Missing subjects join the statement whose
// Sid is e's ID, the one statement the plugin alters, or a new statement of
// that Sid; with e.Adopt, a statement without a Sid that has exactly the
// form the plugin writes and names only e's subjects is first claimed by
// giving it that Sid. A result over the size limit is a *SizeError.
func AddSubjects(doc string, e Edit) (string, bool, error) {
	if err := e.check(); err != nil {
		return "", false, err
	}
	p, err := parsePolicy(doc)
	if err != nil {
		return "", false, err
	}
	key, err := subKey(e.Provider)
	if err != nil {
		return "", false, err
	}
	id := e.ID()
	own := p.find(id)
	changed := false
	if own == nil && e.Adopt {
		if own = p.adoptable(e, key); own != nil {
			if err := own.set("Sid", id); err != nil {
				return "", false, err
			}
			changed = true
		}
	}
	missing := p.missing(e, key)
	if len(missing) == 0 && !changed {
		return doc, false, nil
	}
	if len(missing) > 0 {
		if own != nil && !own.onlySubjectMatch(e.Provider, e.op()) {
			// Ours by its Sid, but no longer of our form: written anew, so
			// that no one else's condition binds our subjects.
			missing = dedupe(append(own.values(e.op(), key), missing...))
			*own = *newStatement(e, id)
		}
		if own == nil {
			own = newStatement(e, id)
			p.statements = append(p.statements, own)
		}
		if err := own.setValues(e.op(), key, dedupe(append(own.values(e.op(), key), missing...))); err != nil {
			return "", false, err
		}
	}
	out, err := p.encode()
	if err != nil {
		return "", false, err
	}
	if n, limit := Size(out), e.maxSize(); n > limit {
		return "", false, &SizeError{Size: n, Limit: limit}
	}
	return out, true, nil
}

// RemoveStatement returns doc without the statement whose Sid is e's ID, and
// whether that changed it; no other statement is touched. When it is the
// policy's only statement, which IAM needs, it stays with empty subject
// lists, which match no one.
func RemoveStatement(doc string, e Edit) (string, bool, error) {
	p, err := parsePolicy(doc)
	if err != nil {
		return "", false, err
	}
	key, err := subKey(e.Provider)
	if err != nil {
		return "", false, err
	}
	own := p.find(e.ID())
	if own == nil {
		return doc, false, nil
	}
	if len(p.statements) > 1 {
		p.statements = slices.DeleteFunc(p.statements, func(s *statement) bool { return s == own })
	} else if err := own.setValues(e.op(), key, []string{}); err != nil {
		return "", false, err
	}
	out, err := p.encode()
	return out, err == nil, err
}

// Size is the length IAM counts for a policy: characters other than white
// space.
func Size(doc string) int {
	n := utf8.RuneCountInString(doc)
	for _, r := range doc {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
			n--
		}
	}
	return n
}

// check refuses subjects that a policy document cannot hold as they are.
func (e Edit) check() error {
	for _, sub := range e.Subjects {
		if sub == "" || !utf8.ValidString(sub) {
			return fmt.Errorf("subject %q: not a non-empty UTF-8 string", sub)
		}
	}
	return nil
}

func (e Edit) op() string {
	if e.Wildcard {
		return opLike
	}
	return opEquals
}

func (e Edit) maxSize() int {
	if e.MaxSize > 0 {
		return e.MaxSize
	}
	return DefaultMaxPolicySize
}

func subKey(provider string) (string, error) {
	issuer, err := Issuer(provider)
	if err != nil {
		return "", err
	}
	return issuer + ":sub", nil
}

func dedupe(values []string) []string {
	out := make([]string, 0, len(values))
	for _, v := range values {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// Others describes each statement of doc other than e's (its Sid is not
// e's ID) that lets one of e's subjects assume the role through e's
// provider by StringEquals: once the plugin's own statement is gone, these
// still give the namespace's service accounts the role. Each description
// names the statement (by Sid, or by position when it has none) and the
// subject. A wildcard edit names no namespace, and finds none.
func Others(doc string, e Edit) ([]string, error) {
	if e.Wildcard {
		return nil, nil
	}
	p, err := parsePolicy(doc)
	if err != nil {
		return nil, err
	}
	key, err := subKey(e.Provider)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, s := range p.statements {
		if s.str("Sid") == e.ID() || !s.forProvider(e.Provider) {
			continue
		}
		name := s.str("Sid")
		if name == "" {
			name = fmt.Sprintf("#%d", i+1)
		}
		for _, sub := range s.values(opEquals, key) {
			if slices.Contains(e.Subjects, sub) {
				out = append(out, fmt.Sprintf("statement %s trusts %s", name, sub))
			}
		}
	}
	return out, nil
}
