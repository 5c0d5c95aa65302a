package bench

import "testing"

// The revision a result names is written as git describe writes it, dirty
// when the tree was; the host binary's is read from what its version
// command prints.
func TestRevisions(t *testing.T) {
	const full = "2c20e57a1b2c3d4e5f60718293a4b5c6d7e8f901"
	short := []struct {
		rev      string
		modified bool
		want     string
	}{
		{full, false, "2c20e57"},
		{full, true, "2c20e57-dirty"},
		{"abc", false, "abc"},
	}
	for _, c := range short {
		if got := shortRevision(c.rev, c.modified); got != c.want {
			t.Errorf("shortRevision(%q, %v) = %q, want %q", c.rev, c.modified, got, c.want)
		}
	}
	printed := []struct{ out, want string }{
		{"profilekit (devel)\ngo: go1.26 linux/amd64\nrevision: " + full + "\nplugins: [core]\n", "2c20e57"},
		{"profilekit (devel)\nrevision: " + full + " (modified)\n", "2c20e57-dirty"},
		{"profilekit (devel)\nrevision: \n", ""},
		{"profilekit (devel)\ngo: go1.26 linux/amd64\nplugins: [core]\n", ""},
		{"", ""},
	}
	for _, c := range printed {
		if got := printedRevision(c.out); got != c.want {
			t.Errorf("printedRevision(%q) = %q, want %q", c.out, got, c.want)
		}
	}
}
