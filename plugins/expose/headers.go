package expose

// This file holds the header operations of a route: their templates,
// rendered with bounded output, and the checks of header names.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	networkingv1 "istio.io/api/networking/v1"
)

// HeaderOperations change the headers of a request. Every value of Set and
// Add is a Go template that may call httpPathPrefix "<id>", which returns the
// path prefix of the route with that id (an app's name, a workspace's port
// id). Header names are not templates.
type HeaderOperations struct {
	// Set overwrites the headers.
	Set map[string]string `json:"set,omitempty"`
	// Add appends to the headers.
	Add map[string]string `json:"add,omitempty"`
	// Remove deletes the headers.
	Remove []string `json:"remove,omitempty"`
}

// RenderHeaders executes the templates of ops with httpPathPrefix over
// prefixes. It returns nil when ops changes nothing. Every broken template is
// reported, each naming its operation and header.
func RenderHeaders(ops *HeaderOperations, prefixes PathPrefixes) (*networkingv1.Headers_HeaderOperations, error) {
	if ops == nil || (len(ops.Set) == 0 && len(ops.Add) == 0 && len(ops.Remove) == 0) {
		return nil, nil
	}
	out := &networkingv1.Headers_HeaderOperations{}
	var errs []error
	render := func(op string, in map[string]string) map[string]string {
		if len(in) == 0 {
			return nil
		}
		m := make(map[string]string, len(in))
		for _, name := range slices.Sorted(maps.Keys(in)) {
			v, err := renderValue(op+"["+name+"]", in[name], prefixes)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			m[name] = v
		}
		return m
	}
	out.Set = render("set", ops.Set)
	out.Add = render("add", ops.Add)
	if len(ops.Remove) > 0 {
		out.Remove = slices.Compact(slices.Sorted(slices.Values(ops.Remove)))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// MaxHeaderValueBytes bounds a rendered header value. Envoy refuses far
// smaller headers than a template could produce; the bound stops a runaway
// template early.
const MaxHeaderValueBytes = 8 << 10

// renderValue parses and executes one header value. The template sees no
// data, so a reference to a field fails instead of rendering "<no value>".
// Loops and template calls are refused: a Profile's spec must not be able to
// keep a worker busy, and a header value has no use for them.
func renderValue(name, text string, prefixes PathPrefixes) (string, error) {
	funcs := boundedBuiltins()
	maps.Copy(funcs, template.FuncMap{
		"httpPathPrefix": func(id string) (string, error) {
			p, ok := prefixes[id]
			if !ok {
				return "", fmt.Errorf("no route with id %q (known: %s)", id, strings.Join(slices.Sorted(maps.Keys(prefixes)), ", "))
			}
			return p, nil
		},
	})
	t, err := template.New(name).Option("missingkey=error").Funcs(funcs).Parse(text)
	if err != nil {
		return "", fmt.Errorf("parse header template %q: %w", text, err)
	}
	if len(t.Templates()) > 1 {
		return "", fmt.Errorf("header template %q: %s: define and block are not allowed", text, name)
	}
	if t.Tree != nil {
		if err := onlyPrints(t.Tree.Root); err != nil {
			return "", fmt.Errorf("header template %q: %s: %w", text, name, err)
		}
	}
	b := &boundedBuilder{max: MaxHeaderValueBytes}
	if err := t.Execute(b, struct{}{}); err != nil {
		return "", fmt.Errorf("execute header template %q: %w", text, err)
	}
	v := b.String()
	if strings.ContainsAny(v, "\r\n\x00") {
		return "", fmt.Errorf("header %s: rendered value %q holds a line break or NUL", name, v)
	}
	return v, nil
}

// boundedBuiltins replaces the builtins of text/template that build strings
// with versions that refuse to build one longer than MaxHeaderValueBytes.
// The bound on the rendered value alone is not enough: a value that is only
// measured, never written ({{ $v = print $v $v }} a few dozen times, or
// nested js), doubles at each step and would exhaust the host's memory.
func boundedBuiltins() template.FuncMap {
	bounded := func(name string, expansion int, f func(...any) string) func(...any) (string, error) {
		return func(args ...any) (string, error) {
			if n := argBytes(args) * expansion; n > MaxHeaderValueBytes {
				return "", fmt.Errorf("%s: rendered value is longer than %d bytes", name, MaxHeaderValueBytes)
			}
			return checkLength(name, f(args...))
		}
	}
	return template.FuncMap{
		"print":   bounded("print", 1, fmt.Sprint),
		"println": bounded("println", 1, fmt.Sprintln),
		// An escaper writes at most six bytes for one (\u003C).
		"html":     bounded("html", 6, template.HTMLEscaper),
		"js":       bounded("js", 6, template.JSEscaper),
		"urlquery": bounded("urlquery", 3, template.URLQueryEscaper),
		"printf": func(format string, args ...any) (string, error) {
			pad, err := formatPadding(format)
			if err != nil {
				return "", err
			}
			if n := len(format) + pad + 2*argBytes(args); n > MaxHeaderValueBytes {
				return "", fmt.Errorf("printf: rendered value is longer than %d bytes", MaxHeaderValueBytes)
			}
			return checkLength("printf", fmt.Sprintf(format, args...))
		},
	}
}

// argBytes estimates what fmt prints for args: strings by their length, any
// other value a template can hold (numbers, booleans, nil) in a few bytes.
func argBytes(args []any) int {
	n := 0
	for _, a := range args {
		switch a := a.(type) {
		case string:
			n += len(a)
		case []byte:
			n += len(a)
		default:
			n += 32
		}
	}
	return n
}

func checkLength(name, s string) (string, error) {
	if len(s) > MaxHeaderValueBytes {
		return "", fmt.Errorf("%s: rendered value is longer than %d bytes", name, MaxHeaderValueBytes)
	}
	return s, nil
}

// formatPadding returns the sum of the widths and precisions in a printf
// format, which fmt pads out before any length can be checked, and refuses
// those taken from the arguments (*).
func formatPadding(format string) (int, error) {
	total := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		// Flags, argument indexes, width and precision come before the verb.
		for i++; i < len(format); i++ {
			c := format[i]
			if c == '*' {
				return 0, errors.New("printf: a width or precision taken from the arguments (*) is not allowed")
			}
			if c >= '0' && c <= '9' {
				j := i
				for j < len(format) && format[j] >= '0' && format[j] <= '9' {
					j++
				}
				n, err := strconv.Atoi(format[i:j])
				if err != nil || n > MaxHeaderValueBytes {
					return 0, fmt.Errorf("printf: width or precision %s: rendered value is longer than %d bytes", format[i:j], MaxHeaderValueBytes)
				}
				total += n
				i = j - 1
				continue
			}
			if !strings.ContainsRune("+-# .[]", rune(c)) {
				break
			}
		}
	}
	return total, nil
}

// onlyPrints accepts text, comments, actions and if / with around them,
// and refuses range and template calls.
func onlyPrints(list *parse.ListNode) error {
	if list == nil {
		return nil
	}
	for _, n := range list.Nodes {
		switch n := n.(type) {
		case *parse.TextNode, *parse.ActionNode, *parse.CommentNode:
		case *parse.IfNode:
			if err := errors.Join(onlyPrints(n.List), onlyPrints(n.ElseList)); err != nil {
				return err
			}
		case *parse.WithNode:
			if err := errors.Join(onlyPrints(n.List), onlyPrints(n.ElseList)); err != nil {
				return err
			}
		case *parse.RangeNode:
			return errors.New("range is not allowed")
		case *parse.TemplateNode:
			return errors.New("template calls are not allowed")
		default:
			return fmt.Errorf("%s is not allowed", n)
		}
	}
	return nil
}

// boundedBuilder fails a write that would take it past max bytes, which
// stops the template executing it.
type boundedBuilder struct {
	strings.Builder
	max int
}

func (b *boundedBuilder) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, fmt.Errorf("rendered value is longer than %d bytes", b.max)
	}
	return b.Builder.Write(p)
}

// validateNames checks that every header name is an HTTP token.
func (ops *HeaderOperations) validateNames() error {
	var errs []error
	check := func(op, name string) {
		if !isToken(name) {
			errs = append(errs, fmt.Errorf("%s: %q is not a valid header name", op, name))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(ops.Set)) {
		check("set", n)
	}
	for _, n := range slices.Sorted(maps.Keys(ops.Add)) {
		check("add", n)
	}
	for _, n := range ops.Remove {
		check("remove", n)
	}
	return errors.Join(errs...)
}

// isToken reports whether s is an HTTP token (RFC 9110, section 5.6.2).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("!#$%&'*+-.^_`|~", r):
		default:
			return false
		}
	}
	return true
}
