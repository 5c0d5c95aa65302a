package apply

import (
	"bytes"
	"slices"
)

// The cache reduces the managed fields of every object it receives
// (FieldNames), so the reduction runs for every watch event the host gets.
// Decoding the set into maps and encoding them again made a tenth of the
// host's allocations during a bulk convergence. The sets the API server
// writes are compact JSON objects of objects, so the reduction reads the
// bytes once and writes the result, and leaves any other input to the
// general path, which gives the same bytes for all input.

// namedFieldsOf reduces raw as FieldNames does, when raw is compact JSON
// whose values are all objects and whose named ("f:") keys are plain ASCII
// without escapes. ok is false for any other input.
func namedFieldsOf(raw []byte) (out []byte, ok bool) {
	out, end, ok := appendNamed(make([]byte, 0, len(raw)), raw, 0)
	if !ok || end != len(raw) {
		return nil, false
	}
	return out, true
}

// member is one named member of a node: its key, quotes included, and
// where its value starts in the input.
type member struct {
	key   []byte
	start int
}

// appendNamed reads the node at raw[i:] and, when out is not nil, appends
// its reduction: a "." member when it has any other member, then its named
// members in key order, each reduced. It returns the index after the node.
func appendNamed(out, raw []byte, i int) ([]byte, int, bool) {
	if i >= len(raw) || raw[i] != '{' {
		return nil, 0, false
	}
	i++
	var named []member
	folded := false
	for i < len(raw) && raw[i] != '}' {
		if len(named) > 0 || folded {
			if raw[i] != ',' {
				return nil, 0, false
			}
			i++
		}
		end, plain, ok := scanString(raw, i)
		if !ok || end >= len(raw) || raw[end] != ':' {
			return nil, 0, false
		}
		key := raw[i:end]
		isNamed := bytes.HasPrefix(key, []byte(`"f:`))
		if isNamed && !plain {
			return nil, 0, false
		}
		_, next, ok := appendNamed(nil, raw, end+1)
		if !ok {
			return nil, 0, false
		}
		if isNamed {
			named = append(named, member{key: key, start: end + 1})
		} else {
			folded = true
		}
		i = next
	}
	if i >= len(raw) {
		return nil, 0, false
	}
	i++
	if out == nil {
		return nil, i, true
	}
	slices.SortFunc(named, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	out = append(out, '{')
	if folded {
		out = append(out, `".":{}`...)
	}
	for k, m := range named {
		if k > 0 && bytes.Equal(m.key, named[k-1].key) {
			return nil, 0, false // a key twice: the general path keeps the last
		}
		if k > 0 || folded {
			out = append(out, ',')
		}
		out = append(append(out, m.key...), ':')
		var ok bool
		if out, _, ok = appendNamed(out, raw, m.start); !ok {
			return nil, 0, false
		}
	}
	return append(out, '}'), i, true
}

// scanString reads the JSON string at raw[i:] and returns the index after
// its closing quote. plain reports that it holds only printable ASCII that
// encoding/json writes as it is: no escapes, no '<', '>' or '&'. A string
// with an escape that is not valid JSON is not ok.
func scanString(raw []byte, i int) (end int, plain, ok bool) {
	if i >= len(raw) || raw[i] != '"' {
		return 0, false, false
	}
	plain = true
	for i++; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '"':
			return i + 1, plain, true
		case c < 0x20:
			return 0, false, false
		case c == '\\':
			plain = false
			if i+1 >= len(raw) {
				return 0, false, false
			}
			i++
			switch raw[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(raw) || !isHex(raw[i+1:i+5]) {
					return 0, false, false
				}
				i += 4
			default:
				return 0, false, false
			}
		case c == '<' || c == '>' || c == '&' || c >= 0x80:
			plain = false
		}
	}
	return 0, false, false
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
