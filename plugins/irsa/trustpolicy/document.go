package trustpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// policy is a decoded trust policy. Its fields keep their order and every
// statement keeps its bytes as they came, so that what the plugin does not
// edit is written back byte for byte.
type policy struct {
	fields     []field
	statements []*statement
}

type field struct {
	key   string
	value json.RawMessage
}

// statement is one statement of a policy: its fields, and its bytes as they
// came until the plugin changes it.
type statement struct {
	raw    json.RawMessage
	fields map[string]json.RawMessage
}

func parsePolicy(doc string) (*policy, error) {
	if !json.Valid([]byte(doc)) {
		return nil, errors.New("trust policy is not a JSON object: invalid JSON")
	}
	dec := json.NewDecoder(strings.NewReader(doc))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return nil, errors.New("trust policy is not a JSON object")
	}
	p := &policy{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("trust policy: %w", err)
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, fmt.Errorf("trust policy field %q: %w", key, err)
		}
		// A repeated key counts once, with its last value, as for
		// encoding/json.
		if i := slices.IndexFunc(p.fields, func(f field) bool { return f.key == key }); i >= 0 {
			p.fields[i].value = value
			continue
		}
		p.fields = append(p.fields, field{key: key, value: value})
	}
	var raws []json.RawMessage
	raw := bytes.TrimSpace(p.field("Statement"))
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '{':
		raws = []json.RawMessage{raw}
	default:
		if err := json.Unmarshal(raw, &raws); err != nil {
			return nil, fmt.Errorf("trust policy statements: %w", err)
		}
	}
	for i, r := range raws {
		s := &statement{raw: r}
		if err := json.Unmarshal(r, &s.fields); err != nil {
			return nil, fmt.Errorf("trust policy statement %d: %w", i, err)
		}
		if s.fields == nil {
			return nil, fmt.Errorf("trust policy statement %d is not an object", i)
		}
		p.statements = append(p.statements, s)
	}
	return p, nil
}

func (p *policy) field(key string) json.RawMessage {
	for _, f := range p.fields {
		if f.key == key {
			return f.value
		}
	}
	return nil
}

// encode writes the policy compactly, fields in their order, statements the
// plugin did not change as they came, and nothing escaped that JSON does not
// require: an escaped & or < counts against IAM's size limit.
func (p *policy) encode() (string, error) {
	var st bytes.Buffer
	st.WriteByte('[')
	for i, s := range p.statements {
		if i > 0 {
			st.WriteByte(',')
		}
		b, err := s.encode()
		if err != nil {
			return "", err
		}
		st.Write(b)
	}
	st.WriteByte(']')
	fields := slices.Clone(p.fields)
	if i := slices.IndexFunc(fields, func(f field) bool { return f.key == "Statement" }); i >= 0 {
		fields[i].value = st.Bytes()
	} else {
		fields = append(fields, field{key: "Statement", value: st.Bytes()})
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			out.WriteByte(',')
		}
		k, err := marshal(f.key)
		if err != nil {
			return "", err
		}
		out.Write(k)
		out.WriteByte(':')
		out.Write(f.value)
	}
	out.WriteByte('}')
	return out.String(), nil
}

// statementOrder is the order of the fields of a statement the plugin
// writes; others follow, sorted.
var statementOrder = []string{"Sid", "Effect", "Principal", "Action", "Condition"}

func (s *statement) encode() ([]byte, error) {
	if s.raw != nil {
		return s.raw, nil
	}
	keys := slices.DeleteFunc(slices.Clone(statementOrder), func(k string) bool { _, ok := s.fields[k]; return !ok })
	for _, k := range slices.Sorted(maps.Keys(s.fields)) {
		if !slices.Contains(statementOrder, k) {
			keys = append(keys, k)
		}
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			out.WriteByte(',')
		}
		kb, err := marshal(k)
		if err != nil {
			return nil, err
		}
		out.Write(kb)
		out.WriteByte(':')
		out.Write(s.fields[k])
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// set replaces one field of the statement, which is then written anew.
func (s *statement) set(key string, value any) error {
	b, err := marshal(value)
	if err != nil {
		return err
	}
	s.fields[key] = b
	s.raw = nil
	return nil
}

// marshal encodes v without the HTML escaping of json.Marshal.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
