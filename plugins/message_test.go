package plugins_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/profilekit/profilekit/plugins"
)

func lines(n int, format string) string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return strings.Join(out, "\n")
}

func TestBoundMessage(t *testing.T) {
	tests := []struct {
		reason string
		in     string
		want   string
	}{
		{reason: "a short message stays as it is", in: "hard[x]: bad", want: "hard[x]: bad"},
		{reason: "five problems are all shown", in: lines(5, "p%d"), want: "p0\np1\np2\np3\np4"},
		{reason: "the rest is counted", in: lines(7, "p%d"), want: "p0\np1\np2\np3\np4\n(and 2 more problems)"},
		{reason: "one more is counted in the singular", in: lines(6, "p%d"), want: "p0\np1\np2\np3\np4\n(and 1 more problem)"},
		{reason: "a long problem is cut", in: strings.Repeat("x", 500), want: strings.Repeat("x", 397) + "..."},
		{reason: "a problem of the most bytes is whole", in: strings.Repeat("x", plugins.MaxProblemBytes), want: strings.Repeat("x", plugins.MaxProblemBytes)},
		{reason: "bytes that start no rune are cut to the mark alone", in: strings.Repeat("\x80", 500), want: "..."},
		{reason: "a cut never splits a rune", in: strings.Repeat("é", 250), want: strings.Repeat("é", 198) + "..."},
		{reason: "50,000 problems are five and a count", in: lines(50000, "hard[bad_%05d]: not a resource name"),
			want: lines(5, "hard[bad_%05d]: not a resource name") + "\n(and 49995 more problems)"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			got := plugins.BoundMessage(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("BoundMessage (-want +got):\n%s", diff)
			}
			if len(got) > plugins.MaxMessageBytes {
				t.Errorf("%d bytes, above %d", len(got), plugins.MaxMessageBytes)
			}
		})
	}
}

func TestBoundMessageTotal(t *testing.T) {
	for _, n := range []int{5, 6, 50000} {
		got := plugins.BoundMessage(lines(n, strings.Repeat("y", 400)+"%d"))
		if len(got) > plugins.MaxMessageBytes {
			t.Errorf("%d problems: %d bytes, above %d", n, len(got), plugins.MaxMessageBytes)
		}
		if n > 5 && !strings.HasSuffix(got, fmt.Sprintf("(and %d more problems)", n-5)) && !strings.HasSuffix(got, "(and 1 more problem)") {
			t.Errorf("%d problems: the count is cut off:\n%s", n, got)
		}
	}
}

func TestFailureMessage(t *testing.T) {
	err := plugins.Terminal(plugins.ReasonInvalidLabel, errors.New(lines(8, "label l%d: bad")))
	want := "InvalidLabel: label l0: bad\nlabel l1: bad\nlabel l2: bad\nlabel l3: bad\nlabel l4: bad\n(and 3 more problems)"
	if diff := cmp.Diff(want, plugins.FailureMessage(err, plugins.ReasonApplyFailed)); diff != "" {
		t.Errorf("FailureMessage (-want +got):\n%s", diff)
	}
	if got := plugins.FailureMessage(errors.New("timeout"), plugins.ReasonApplyFailed); got != "ApplyFailed: timeout" {
		t.Errorf("FailureMessage of a plain error = %q", got)
	}
}
