// Package trustpolicy edits IAM role trust policies: it adds and removes
// the subjects of Kubernetes service accounts for a cluster's OIDC provider
// and keeps every statement and condition it did not write. Its functions
// are pure; the irsa plugin reads and writes the policies.
//
// # Stability
//
// Experimental: the irsa plugin's own editor, exported so that it can be
// fuzzed and tested on its own. Its functions may change in any minor
// release.
package trustpolicy

import (
	"bytes"
	"encoding/json"
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

// Edit says which subjects to add to or remove from a trust policy.
type Edit struct {
	// Provider is the ARN of the cluster's IAM OIDC provider,
	// arn:aws:iam::<account>:oidc-provider/<issuer>.
	Provider string
	// Audience is the token audience a new statement requires.
	Audience string
	// Subjects are system:serviceaccount:<namespace>:<name> values, or
	// patterns when Wildcard is set.
	Subjects []string
	// Wildcard matches the subjects with StringLike instead of StringEquals.
	Wildcard bool
	// MaxSize is the size limit of the policy in characters without white
	// space; 0 means DefaultMaxPolicySize.
	MaxSize int
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
// through e's provider in doc.
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
	for _, sub := range e.Subjects {
		if !slices.ContainsFunc(p.statements, func(s statement) bool {
			return s.ours(e.Provider) && slices.Contains(s.values(e.op(), key), sub)
		}) {
			return false, nil
		}
	}
	return true, nil
}

// AddSubjects returns doc with e's subjects allowed to assume the role, and
// whether that changed it. Every statement and condition already there is
// kept; a subject already present is not added again. Missing subjects join
// the first statement for the provider whose only conditions are the
// subject (and audience) match, or a new statement of that form. A result
// over the size limit is a *SizeError.
func AddSubjects(doc string, e Edit) (string, bool, error) {
	if has, err := HasSubjects(doc, e); err != nil || has {
		return doc, false, err
	}
	p, err := parsePolicy(doc)
	if err != nil {
		return "", false, err
	}
	key, _ := subKey(e.Provider)
	target := slices.IndexFunc(p.statements, func(s statement) bool { return s.onlySubjectMatch(e.Provider, e.op()) })
	if target < 0 {
		p.statements = append(p.statements, newStatement(e))
		target = len(p.statements) - 1
	}
	s := p.statements[target]
	values := s.values(e.op(), key)
	for _, sub := range e.Subjects {
		if !slices.Contains(values, sub) {
			values = append(values, sub)
		}
	}
	if err := s.setValues(e.op(), key, dedupe(values)); err != nil {
		return "", false, err
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

// RemoveSubjects returns doc without e's subjects, and whether that changed
// it. Only those values leave the subject lists of the provider's
// statements; a statement whose subject list becomes empty is dropped rather
// than left to trust every service account, unless it is the policy's last,
// which then keeps an empty list that matches no one.
func RemoveSubjects(doc string, e Edit) (string, bool, error) {
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
	changed := false
	kept := make([]statement, 0, len(p.statements))
	var dropped []statement
	for _, s := range p.statements {
		if !s.ours(e.Provider) {
			kept = append(kept, s)
			continue
		}
		values := s.values(e.op(), key)
		left := slices.DeleteFunc(slices.Clone(values), func(v string) bool { return slices.Contains(e.Subjects, v) })
		if len(left) == len(values) {
			kept = append(kept, s)
			continue
		}
		changed = true
		if err := s.setValues(e.op(), key, left); err != nil {
			return "", false, err
		}
		if len(left) > 0 || s.hasOtherSubjectKey(key) {
			kept = append(kept, s)
			continue
		}
		dropped = append(dropped, s)
	}
	if !changed {
		return doc, false, nil
	}
	if len(kept) == 0 && len(dropped) > 0 {
		// IAM takes no policy without statements.
		kept = dropped[:1]
	}
	p.statements = kept
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

// policy is a decoded trust policy. Every field and statement keeps its JSON
// as it came, so that what the plugin does not edit is written back as is.
type policy struct {
	fields     map[string]json.RawMessage
	statements []statement
}

type statement map[string]json.RawMessage

func parsePolicy(doc string) (*policy, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("trust policy is not a JSON object: %v", err)
	}
	p := &policy{fields: fields}
	raw := bytes.TrimSpace(fields["Statement"])
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '{':
		var s statement
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("trust policy statement: %w", err)
		}
		p.statements = []statement{s}
	default:
		if err := json.Unmarshal(raw, &p.statements); err != nil {
			return nil, fmt.Errorf("trust policy statements: %w", err)
		}
	}
	for i, s := range p.statements {
		if s == nil {
			return nil, fmt.Errorf("trust policy statement %d is not an object", i)
		}
	}
	return p, nil
}

func (p *policy) encode() (string, error) {
	fields := make(map[string]json.RawMessage, len(p.fields))
	for k, v := range p.fields {
		fields[k] = v
	}
	st, err := json.Marshal(p.statements)
	if err != nil {
		return "", err
	}
	fields["Statement"] = st
	out, err := json.Marshal(fields)
	return string(out), err
}

// stringsOf decodes a value that IAM allows as a string or a list of strings.
func stringsOf(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		return many
	}
	return nil
}

func (s statement) str(field string) string {
	var v string
	_ = json.Unmarshal(s[field], &v)
	return v
}

func (s statement) allowsWebIdentity() bool {
	return s.str("Effect") == "Allow" && slices.Contains(stringsOf(s["Action"]), ActionAssumeWithWebIdentity)
}

func (s statement) federated() []string {
	var principal map[string]json.RawMessage
	if json.Unmarshal(s["Principal"], &principal) != nil {
		return nil
	}
	return stringsOf(principal["Federated"])
}

// ours reports whether the statement lets web identities of the provider
// assume the role: the only statements whose subject lists the plugin edits.
func (s statement) ours(provider string) bool {
	return s.allowsWebIdentity() && slices.Contains(s.federated(), provider)
}

func (s statement) conditions() map[string]map[string]json.RawMessage {
	var c map[string]map[string]json.RawMessage
	_ = json.Unmarshal(s["Condition"], &c)
	return c
}

// values returns the values of condition op on key; condition keys are
// case-insensitive in IAM.
func (s statement) values(op, key string) []string {
	for k, v := range s.conditions()[op] {
		if strings.EqualFold(k, key) {
			return stringsOf(v)
		}
	}
	return nil
}

// onlySubjectMatch reports whether the statement is the provider's and its
// only conditions match the subject (and the audience) with op, so that a
// subject added there is bound by nothing someone else wrote.
func (s statement) onlySubjectMatch(provider, op string) bool {
	if !s.ours(provider) || len(stringsOf(s["Action"])) != 1 || len(s.federated()) != 1 {
		return false
	}
	issuer, _ := Issuer(provider)
	conds := s.conditions()
	found := false
	for o, keys := range conds {
		for k := range keys {
			switch {
			case o == op && strings.EqualFold(k, issuer+":sub"):
				found = true
			case o == opEquals && strings.EqualFold(k, issuer+":aud"):
			default:
				return false
			}
		}
	}
	return found
}

// hasOtherSubjectKey reports whether another condition of the statement still
// names the subject, so that it does not trust every service account once
// the list of key is empty.
func (s statement) hasOtherSubjectKey(key string) bool {
	for _, keys := range s.conditions() {
		for k, v := range keys {
			if strings.EqualFold(k, key) && len(stringsOf(v)) > 0 {
				return true
			}
		}
	}
	return false
}

// setValues sets condition op on key (keeping its spelling when present).
func (s statement) setValues(op, key string, values []string) error {
	conds := s.conditions()
	if conds == nil {
		conds = map[string]map[string]json.RawMessage{}
	}
	if conds[op] == nil {
		conds[op] = map[string]json.RawMessage{}
	}
	for k := range conds[op] {
		if strings.EqualFold(k, key) {
			key = k
		}
	}
	var raw []byte
	var err error
	if len(values) == 1 {
		raw, err = json.Marshal(values[0])
	} else {
		raw, err = json.Marshal(values)
	}
	if err != nil {
		return err
	}
	conds[op][key] = raw
	c, err := json.Marshal(conds)
	if err != nil {
		return err
	}
	s["Condition"] = c
	return nil
}

func newStatement(e Edit) statement {
	issuer, _ := Issuer(e.Provider)
	aud := e.Audience
	if aud == "" {
		aud = DefaultAudience
	}
	principal, _ := json.Marshal(map[string]string{"Federated": e.Provider})
	cond, _ := json.Marshal(map[string]map[string]string{opEquals: {issuer + ":aud": aud}})
	if e.Wildcard {
		cond, _ = json.Marshal(map[string]map[string]string{opEquals: {issuer + ":aud": aud}, opLike: {}})
	}
	return statement{
		"Effect":    json.RawMessage(`"Allow"`),
		"Principal": principal,
		"Action":    json.RawMessage(`"` + ActionAssumeWithWebIdentity + `"`),
		"Condition": cond,
	}
}
