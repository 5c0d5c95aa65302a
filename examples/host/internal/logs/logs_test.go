package logs

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// encodings counts how often a value was encoded into a log line.
type encodings struct{ n *int }

func (e encodings) MarshalJSON() ([]byte, error) {
	*e.n++
	return []byte(`"the-value"`), nil
}

// TestValuesEncodedOnlyWhenWritten: a logger's values are encoded when it
// writes a line, not when they are given, so that the loggers a controller
// makes for every reconcile cost nothing at a level that hides their lines.
func TestValuesEncodedOnlyWhenWritten(t *testing.T) {
	var out bytes.Buffer
	l, err := New("error", "json", &out)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	withValue := l.WithValues("profile", encodings{&n}).WithValues("reconcileID", "r-1")
	withValue.Info("hidden at the error level")
	if n != 0 {
		t.Fatalf("value encoded %d times before any line was written, want 0", n)
	}
	withValue.Error(errors.New("boom"), "written")
	if n != 1 {
		t.Fatalf("value encoded %d times after one line, want 1", n)
	}
	withValue.Error(errors.New("boom"), "written again")
	if n != 1 {
		t.Errorf("value encoded %d times after two lines, want 1 (kept from the first)", n)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), out.String())
	}
	for _, line := range lines {
		for _, want := range []string{`"profile":"the-value"`, `"reconcileID":"r-1"`, `"error":"boom"`} {
			if !strings.Contains(line, want) {
				t.Errorf("line %s lacks %s", line, want)
			}
		}
	}
}
