package trustpolicy

import (
	"encoding/json"
	"slices"
	"strings"
)

// find returns the statement whose Sid is id, the plugin's, or nil.
func (p *policy) find(id string) *statement {
	for _, s := range p.statements {
		if s.str("Sid") == id {
			return s
		}
	}
	return nil
}

// missing returns e's subjects that no statement for the provider names.
func (p *policy) missing(e Edit, key string) []string {
	var out []string
	for _, sub := range dedupe(e.Subjects) {
		if !slices.ContainsFunc(p.statements, func(s *statement) bool {
			return s.forProvider(e.Provider) && slices.Contains(s.values(e.op(), key), sub)
		}) {
			out = append(out, sub)
		}
	}
	return out
}

// adoptable returns the first statement without a Sid that is exactly what
// newStatement writes for e, with subjects that are all e's, or nil.
func (p *policy) adoptable(e Edit, key string) *statement {
	want := newStatement(e, "")
	for _, s := range p.statements {
		if _, ok := s.fields["Sid"]; ok || len(s.fields) != len(want.fields) || !s.onlySubjectMatch(e.Provider, e.op()) {
			continue
		}
		values := s.values(e.op(), key)
		if len(values) == 0 || slices.ContainsFunc(values, func(v string) bool { return !slices.Contains(e.Subjects, v) }) {
			continue
		}
		issuer, _ := Issuer(e.Provider)
		var principal map[string]json.RawMessage
		_ = json.Unmarshal(s.fields["Principal"], &principal)
		if s.str("Effect") == "Allow" && len(principal) == 1 && slices.Equal(s.federated(), []string{e.Provider}) &&
			slices.Equal(s.values(opEquals, issuer+":aud"), want.values(opEquals, issuer+":aud")) &&
			len(s.conditions()) == len(want.conditions()) {
			return s
		}
	}
	return nil
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

func (s *statement) str(field string) string {
	var v string
	_ = json.Unmarshal(s.fields[field], &v)
	return v
}

func (s *statement) allowsWebIdentity() bool {
	return s.str("Effect") == "Allow" && slices.Contains(stringsOf(s.fields["Action"]), ActionAssumeWithWebIdentity)
}

func (s *statement) federated() []string {
	var principal map[string]json.RawMessage
	if json.Unmarshal(s.fields["Principal"], &principal) != nil {
		return nil
	}
	return stringsOf(principal["Federated"])
}

// forProvider reports whether the statement lets web identities of the
// provider assume the role.
func (s *statement) forProvider(provider string) bool {
	return s.allowsWebIdentity() && slices.Contains(s.federated(), provider)
}

func (s *statement) conditions() map[string]map[string]json.RawMessage {
	var c map[string]map[string]json.RawMessage
	_ = json.Unmarshal(s.fields["Condition"], &c)
	return c
}

// values returns the values of condition op on key; condition keys are
// case-insensitive in IAM.
func (s *statement) values(op, key string) []string {
	for k, v := range s.conditions()[op] {
		if strings.EqualFold(k, key) {
			return stringsOf(v)
		}
	}
	return nil
}

// onlySubjectMatch reports whether the statement is the provider's and its
// only conditions match the subject (and the audience) with op, so that a
// subject added there is bound by nothing else.
func (s *statement) onlySubjectMatch(provider, op string) bool {
	if !s.forProvider(provider) || len(stringsOf(s.fields["Action"])) != 1 || len(s.federated()) != 1 {
		return false
	}
	issuer, _ := Issuer(provider)
	found := false
	for o, keys := range s.conditions() {
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

// setValues sets condition op on key (keeping its spelling when present).
func (s *statement) setValues(op, key string, values []string) error {
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
	var v any = values
	if len(values) == 1 {
		v = values[0]
	}
	raw, err := marshal(v)
	if err != nil {
		return err
	}
	conds[op][key] = raw
	return s.set("Condition", conds)
}

// newStatement returns the statement the plugin writes for e's provider and
// audience, with Sid id (none when empty) and no subjects yet.
func newStatement(e Edit, id string) *statement {
	issuer, _ := Issuer(e.Provider)
	aud := e.Audience
	if aud == "" {
		aud = DefaultAudience
	}
	principal, _ := marshal(map[string]string{"Federated": e.Provider})
	cond, _ := marshal(map[string]map[string]string{opEquals: {issuer + ":aud": aud}})
	if e.Wildcard {
		cond, _ = marshal(map[string]map[string]string{opEquals: {issuer + ":aud": aud}, opLike: {}})
	}
	s := &statement{fields: map[string]json.RawMessage{
		"Effect":    json.RawMessage(`"Allow"`),
		"Principal": principal,
		"Action":    json.RawMessage(`"` + ActionAssumeWithWebIdentity + `"`),
		"Condition": cond,
	}}
	if id != "" {
		s.fields["Sid"], _ = marshal(id)
	}
	return s
}
