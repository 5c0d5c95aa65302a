// Package progress shows how far a long command has come, on a terminal
// only: one line on stderr with the count done of the total, the share, the
// rate and the time left, redrawn in place and cleared when the work ends.
// When stderr is not a terminal (a pipe, a file, a CI log) it writes
// nothing, as kubectl and helm keep their output clean for scripts.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// DefaultEvery is how often the line is redrawn at most.
const DefaultEvery = 200 * time.Millisecond

// eraseLine returns to the start of the line and clears it.
const eraseLine = "\r\x1b[K"

// Options change how a Bar draws.
type Options struct {
	// Terminal reports whether w is a terminal. Default IsTerminal.
	Terminal func(w io.Writer) bool
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Every is how often the line is redrawn at most. Default DefaultEvery.
	Every time.Duration
}

// Bar is the progress of one piece of work, such as "diff: 120/1000
// Profiles (12%), 45/s, about 19s left". Its methods may be called from
// several goroutines. A nil *Bar, or one whose writer is not a terminal,
// draws nothing.
type Bar struct {
	w           io.Writer
	verb, noun  string
	total       int
	now         func() time.Time
	every       time.Duration
	mu          sync.Mutex
	done        int
	start, last time.Time
	drawn       bool
	ended       bool
}

// Start returns the Bar of total pieces of work (noun, such as
// "Profiles") that verb (the command) does, drawn on w when w is a
// terminal, and draws it at once.
func Start(w io.Writer, verb, noun string, total int, o Options) *Bar {
	if o.Terminal == nil {
		o.Terminal = IsTerminal
	}
	if !o.Terminal(w) || total <= 0 {
		return nil
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Every <= 0 {
		o.Every = DefaultEvery
	}
	b := &Bar{w: w, verb: verb, noun: noun, total: total, now: o.Now, every: o.Every}
	b.start = b.now()
	b.mu.Lock()
	b.draw(b.start)
	b.mu.Unlock()
	return b
}

// Add counts n more pieces done, and redraws the line unless it was drawn
// less than Every ago (the last piece always redraws it).
func (b *Bar) Add(n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	b.done += n
	if now := b.now(); b.done >= b.total || now.Sub(b.last) >= b.every {
		b.draw(now)
	}
}

// Done clears the line, so that what the command prints next starts on a
// clean line; the Bar then draws no more.
func (b *Bar) Done() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.erase()
	b.ended = true
}

// Above returns a writer whose writes appear above the line: each clears
// the line, writes to w, and draws the line again. A nil Bar returns w.
func (b *Bar) Above(w io.Writer) io.Writer {
	if b == nil {
		return w
	}
	return above{b: b, w: w}
}

type above struct {
	b *Bar
	w io.Writer
}

func (a above) Write(p []byte) (int, error) {
	a.b.mu.Lock()
	defer a.b.mu.Unlock()
	wasDrawn := a.b.drawn
	a.b.erase()
	n, err := a.w.Write(p)
	if wasDrawn && !a.b.ended {
		a.b.draw(a.b.now())
	}
	return n, err
}

// draw writes the line; b.mu is held.
func (b *Bar) draw(now time.Time) {
	b.last = now
	b.drawn = true
	fmt.Fprint(b.w, eraseLine+Line(b.verb, b.noun, b.done, b.total, now.Sub(b.start)))
}

// erase clears the line if it is drawn; b.mu is held.
func (b *Bar) erase() {
	if b.drawn {
		fmt.Fprint(b.w, eraseLine)
		b.drawn = false
	}
}

// Line is the progress line after elapsed with done of total pieces done:
// the count, the share, and once a piece is done, the rate and the time
// left at that rate.
func Line(verb, noun string, done, total int, elapsed time.Duration) string {
	s := fmt.Sprintf("%s: %d/%d %s (%d%%)", verb, done, total, noun, done*100/total)
	if done == 0 || elapsed <= 0 {
		return s
	}
	rate := float64(done) / elapsed.Seconds()
	if rate >= 10 {
		s += fmt.Sprintf(", %.0f/s", rate)
	} else {
		s += fmt.Sprintf(", %.1f/s", rate)
	}
	if left := total - done; left > 0 {
		eta := time.Duration(float64(left) / rate * float64(time.Second))
		s += fmt.Sprintf(", about %s left", max(time.Second, eta.Round(time.Second)))
	}
	return s
}

// IsTerminal reports whether w is a file that is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
