package apply

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The applied hash is the SHA-256 of an object's JSON, as encoding/json
// writes an unstructured object (keys sorted, HTML characters escaped),
// with the Profile's UID and name replaced (see templateOf). Every object
// a host ever applied carries it, so its bytes must never change: a new
// hash for the same object would rewrite every object once. appendJSON
// writes those bytes without reflection into a buffer that is reused, at a
// fraction of encoding/json's allocations; a value of a type it does not
// know is written by encoding/json itself.

// hashScratch holds the buffers of one hash.
type hashScratch struct {
	json, template []byte
	keys           [][]string
}

var hashScratches = sync.Pool{New: func() any { return new(hashScratch) }}

// appliedHash returns the hash annotation's value for obj, an unstructured
// object's content without the annotation.
func (a *Applier) appliedHash(obj map[string]any) string {
	s := hashScratches.Get().(*hashScratch)
	defer hashScratches.Put(s)
	var err error
	s.json, err = s.appendJSON(s.json[:0], obj, 0)
	if err != nil {
		// Not one an apply could send either; the send reports it.
		s.json = append(s.json[:0], err.Error()...)
	}
	data := s.json
	if uid := string(a.profile.UID); uid != "" {
		s.template = replaceInto(s.template[:0], data, uid, 1)
		data = s.template
	}
	sum := sha256.New()
	writeReplaced(sum, data, a.profile.Name, 0)
	var out [sha256.Size]byte
	return hex.EncodeToString(sum.Sum(out[:0])[:8])
}

// encodeObject returns obj's JSON, as encoding/json writes it, for a
// request body: a new slice, since the request may outlive the call.
func encodeObject(obj map[string]any) ([]byte, error) {
	s := hashScratches.Get().(*hashScratch)
	defer hashScratches.Put(s)
	return s.appendJSON(make([]byte, 0, max(512, len(s.json))), obj, 0)
}

// replaceInto appends src to dst with every old replaced by the byte b.
func replaceInto(dst, src []byte, old string, b byte) []byte {
	for {
		i := bytes.Index(src, []byte(old))
		if i < 0 {
			return append(dst, src...)
		}
		dst = append(append(dst, src[:i]...), b)
		src = src[i+len(old):]
	}
}

// writeReplaced writes src to w with every old replaced by the byte b;
// an empty old replaces nothing.
func writeReplaced(w interface{ Write([]byte) (int, error) }, src []byte, old string, b byte) {
	for old != "" {
		i := bytes.Index(src, []byte(old))
		if i < 0 {
			break
		}
		_, _ = w.Write(src[:i])
		_, _ = w.Write([]byte{b})
		src = src[i+len(old):]
	}
	_, _ = w.Write(src)
}

// appendJSON appends v's JSON as encoding/json.Marshal writes it; depth
// picks the key buffer of nested maps.
func (s *hashScratch) appendJSON(dst []byte, v any, depth int) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case string:
		return appendString(dst, v), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case float64:
		return appendFloat(dst, v)
	case []any:
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = s.appendJSON(dst, e, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		for len(s.keys) <= depth {
			s.keys = append(s.keys, nil)
		}
		keys := s.keys[depth][:0]
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, strings.Compare)
		s.keys[depth] = keys
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(appendString(dst, k), ':')
			var err error
			if dst, err = s.appendJSON(dst, v[k], depth+1); err != nil {
				return dst, err
			}
		}
		clear(keys)
		return append(dst, '}'), nil
	}
	b, err := json.Marshal(v)
	return append(dst, b...), err
}

// appendFloat writes f as encoding/json does: like ES6, exponent notation
// only for very small and very large numbers.
func appendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		_, err := json.Marshal(f)
		return dst, err
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

const hexDigits = "0123456789abcdef"

// appendString writes s quoted as encoding/json does with HTML escaping:
// <, > and & as \u00XX, control characters escaped, invalid UTF-8 as
// U+FFFD, and U+2028 and U+2029 escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(dst, s[start:]...), '"')
}
