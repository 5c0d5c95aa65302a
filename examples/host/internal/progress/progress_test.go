package progress

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// clock is a clock the test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// aTerminal takes every writer for a terminal.
func aTerminal(io.Writer) bool { return true }

// frames returns what was drawn, one entry per redraw, and whether the
// output ends with the line cleared.
func frames(out string) ([]string, bool) {
	var got []string
	for _, f := range strings.Split(out, eraseLine) {
		if f != "" {
			got = append(got, f)
		}
	}
	return got, strings.HasSuffix(out, eraseLine)
}

// TestOnATerminal: the line counts, shows the rate and the time left once a
// piece is done, is redrawn at most every Every (and always for the last
// piece), and is gone after Done; output written Above it lands between
// clears and redraws.
func TestOnATerminal(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Unix(1000, 0)}
	b := Start(&out, "diff", "Profiles", 100, Options{Terminal: aTerminal, Now: c.now, Every: time.Second})
	for range 40 {
		c.t = c.t.Add(100 * time.Millisecond)
		b.Add(1)
	}
	got, _ := frames(out.String())
	want := []string{
		"diff: 0/100 Profiles (0%)",
		"diff: 10/100 Profiles (10%), 10/s, about 9s left",
		"diff: 20/100 Profiles (20%), 10/s, about 8s left",
		"diff: 30/100 Profiles (30%), 10/s, about 7s left",
		"diff: 40/100 Profiles (40%), 10/s, about 6s left",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("frames:\n%s\nwant (once a second, not once a piece):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	out.Reset()
	onTop := b.Above(&out)
	if _, err := io.WriteString(onTop, "profile team-a: released\n"); err != nil {
		t.Fatal(err)
	}
	if want := eraseLine + "profile team-a: released\n" + eraseLine + "diff: 40/100 Profiles (40%), 10/s, about 6s left"; out.String() != want {
		t.Errorf("a write above the line gave %q, want %q", out.String(), want)
	}

	out.Reset()
	c.t = c.t.Add(10 * time.Millisecond)
	b.Add(60)
	if got, _ := frames(out.String()); len(got) != 1 || got[0] != "diff: 100/100 Profiles (100%), 25/s" {
		t.Errorf("the last piece drew %q, want the full count at once", got)
	}
	out.Reset()
	b.Done()
	if out.String() != eraseLine {
		t.Errorf("Done wrote %q, want the line cleared", out.String())
	}
	out.Reset()
	b.Add(1)
	b.Done()
	if _, err := io.WriteString(b.Above(&out), "summary\n"); err != nil {
		t.Fatal(err)
	}
	if out.String() != "summary\n" {
		t.Errorf("after Done, output %q, want only what the command wrote", out.String())
	}
}

// TestNotATerminal: a pipe, a file or a buffer gets nothing, however much
// work is done, and output above it passes through unchanged.
func TestNotATerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var buf bytes.Buffer
	for name, dst := range map[string]io.Writer{"pipe": w, "buffer": &buf} {
		if IsTerminal(dst) {
			t.Errorf("%s is taken for a terminal", name)
		}
		b := Start(dst, "validate", "Profiles", 10, Options{})
		if b != nil {
			t.Errorf("%s: a Bar was made", name)
		}
		for range 10 {
			b.Add(1)
		}
		if _, err := io.WriteString(b.Above(&buf), "profile a: admitted\n"); err != nil {
			t.Fatal(err)
		}
		b.Done()
	}
	w.Close()
	piped, _ := io.ReadAll(r)
	if len(piped) != 0 || buf.String() != "profile a: admitted\nprofile a: admitted\n" {
		t.Errorf("off a terminal: pipe got %q, buffer %q; want nothing but the command's own lines", piped, buf.String())
	}
}

func TestLine(t *testing.T) {
	for _, tc := range []struct {
		reason      string
		done, total int
		elapsed     time.Duration
		want        string
	}{
		{"nothing done yet: no rate to tell", 0, 5000, 3 * time.Second, "release: 0/5000 Profiles (0%)"},
		{"slow: a decimal rate, minutes left", 3, 1000, 2 * time.Second, "release: 3/1000 Profiles (0%), 1.5/s, about 11m5s left"},
		{"fast", 2500, 5000, 5 * time.Second, "release: 2500/5000 Profiles (50%), 500/s, about 5s left"},
		{"under a second left says 1s", 999, 1000, time.Second, "release: 999/1000 Profiles (99%), 999/s, about 1s left"},
		{"all done: no time left", 10, 10, time.Second, "release: 10/10 Profiles (100%), 10/s"},
	} {
		if got := Line("release", "Profiles", tc.done, tc.total, tc.elapsed); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.reason, got, tc.want)
		}
	}
}
