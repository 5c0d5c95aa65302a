package plugins

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds of what one failure may put into a condition, an Event or an
// admission response. A spec with thousands of problems must not make a status
// write larger than the API server takes, and an Event's note holds at most
// 1 KiB, so a message shows the first few problems, each cut to a line, and
// counts the rest.
const (
	// MaxMessageProblems is how many problems a message lists.
	MaxMessageProblems = 5
	// MaxProblemBytes is how long one listed problem may be.
	MaxProblemBytes = 400
	// MaxMessageBytes is how long a whole message may be. An Event note of
	// "<kind>: <message>" stays under the API server's 1 KiB.
	MaxMessageBytes = 900
)

// BoundMessage returns msg, one problem per line, cut to the first
// MaxMessageProblems problems of at most MaxProblemBytes each, followed by a
// count of the problems left out, and at most MaxMessageBytes long in all.
func BoundMessage(msg string) string {
	lines := strings.Split(msg, "\n")
	shown := lines
	if len(shown) > MaxMessageProblems {
		shown = shown[:MaxMessageProblems]
	}
	var b strings.Builder
	for i, l := range shown {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(truncate(l, MaxProblemBytes))
	}
	// The count is never cut off: it says how much the reader does not see.
	var tail string
	if rest := len(lines) - len(shown); rest > 0 {
		tail = fmt.Sprintf("\n(and %d more %s)", rest, plural(rest, "problem", "problems"))
	}
	return truncate(b.String(), MaxMessageBytes-len(tail)) + tail
}

// FailureMessage is the message of the False condition a plugin reports for
// err, reason first (fallback when err carries none), bounded. Hosts and the
// admission webhook use it alike, so that a Profile's author reads the same
// words in both places.
func FailureMessage(err error, fallback string) string {
	return ConditionMessage(ReasonOf(err, fallback), BoundMessage(err.Error()))
}

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "..."
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// prefixedError puts a prefix in front of every line of an error, so that
// each problem of a joined error names where it is.
type prefixedError struct {
	prefix string
	err    error
}

func prefixed(prefix string, err error) error { return &prefixedError{prefix: prefix, err: err} }

func (e *prefixedError) Error() string {
	lines := strings.Split(e.err.Error(), "\n")
	for i, l := range lines {
		lines[i] = e.prefix + ": " + l
	}
	return strings.Join(lines, "\n")
}

func (e *prefixedError) Unwrap() error { return e.err }
