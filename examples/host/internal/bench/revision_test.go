package bench

import (
	"runtime/debug"
	"testing"
)

// The revision a result names is the one the binary was built from,
// shortened as git describe shortens it, dirty when its tree was; the host
// binary's is read from what its version command prints.
func TestRevisions(t *testing.T) {
	const full = "2c20e57a1b2c3d4e5f60718293a4b5c6d7e8f901"
	built := []struct {
		settings []debug.BuildSetting
		want     string
	}{
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: full}, {Key: "vcs.modified", Value: "false"}}, "2c20e57"},
		{[]debug.BuildSetting{{Key: "vcs.modified", Value: "true"}, {Key: "vcs.revision", Value: full}}, "2c20e57-dirty"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}, "abc"},
		{[]debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}, ""},
		{nil, ""},
	}
	for _, c := range built {
		if got := builtRevision(c.settings); got != c.want {
			t.Errorf("builtRevision(%v) = %q, want %q", c.settings, got, c.want)
		}
	}
	printed := []struct{ out, want string }{
		{"profilekit (devel)\ngo: go1.26 linux/amd64\nrevision: " + full + "\nplugins: [core]\n", "2c20e57"},
		{"profilekit (devel)\nrevision: " + full + " (modified)\n", "2c20e57-dirty"},
		{"profilekit (devel)\ngo: go1.26 linux/amd64\nplugins: [core]\n", ""},
		{"", ""},
	}
	for _, c := range printed {
		if got := printedRevision(c.out); got != c.want {
			t.Errorf("printedRevision(%q) = %q, want %q", c.out, got, c.want)
		}
	}
}
