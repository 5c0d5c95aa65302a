package testenv

import (
	"flag"
	"strconv"
)

// Parallel lets n tests that call t.Parallel run at once, unless the command
// line says how many with -parallel. Go's default is the number of cores,
// right for tests that compute; a package whose tests mostly wait on its
// servers (a controller to bind a volume, a poll interval, a restart) calls
// it first thing in TestMain.
func Parallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}
