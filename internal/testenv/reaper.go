package testenv

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// A test binary that dies without running its deferred calls (a panic in a
// goroutine, a kill by go test or a mutation tool) would leave envtest's
// kube-apiserver and etcd running, re-parented to init, and their folders
// in the temporary directory: envtest starts them without a parent-death
// signal, and nothing else ends them. The reaper is a small shell started
// beside the binary, in a process group of its own, that reads from a pipe
// only the binary holds. The binary tells it, one line each, what to end
// ("kill PID"), what no longer needs it ("forget PID", once stopped in
// order, so that a reused PID is never killed) and which folders to remove
// ("rm DIR"). When the pipe closes, however the binary ended, the reaper
// kills what is left and removes the folders. After a clean stop there is
// nothing left to kill and the folders are gone already. A server whose
// children outlive it when it is killed ("quit PID": PostgreSQL, whose
// backends each run in a session of their own, and one in CREATE DATABASE
// waits for the checkpointer for ever) is first asked to end them
// (SIGQUIT, PostgreSQL's immediate shutdown), then killed.
const reaperScript = `
pids=" "; quits=" "; dirs=""
while read -r verb arg; do
	case $verb in
	kill) pids="$pids$arg " ;;
	quit) quits="$quits$arg " ;;
	forget) pids=$(echo "$pids" | sed "s/ $arg / /"); quits=$(echo "$quits" | sed "s/ $arg / /") ;;
	rm) dirs="$dirs $arg" ;;
	esac
done
if [ -n "${quits# }" ]; then
	kill -QUIT $quits 2>/dev/null && sleep 2
	pids="$pids$quits"
fi
[ -n "${pids# }" ] && kill -9 $pids 2>/dev/null
[ -n "$dirs" ] && rm -rf -- $dirs
exit 0
`

// reaperPipe is the write end of the reaper's pipe; nil when it could not
// start (the servers are then ended as before, by a clean stop only).
var (
	reaperOnce sync.Once
	reaperMu   sync.Mutex
	reaperPipe io.WriteCloser
)

// reaper returns the pipe to the binary's reaper, starting it the first time.
func reaper() io.Writer {
	reaperOnce.Do(func() {
		if runtime.GOOS != "linux" {
			return
		}
		cmd := exec.Command("/bin/sh", "-c", reaperScript)
		// Its own process group: a signal to the binary's group (timeout
		// sends one) leaves it to clean up.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		w, err := cmd.StdinPipe()
		if err != nil {
			return
		}
		if err := cmd.Start(); err != nil {
			return
		}
		// Never waited for: it ends when this binary does.
		reaperPipe = w
	})
	if reaperPipe == nil {
		return io.Discard
	}
	return reaperPipe
}

// tell sends the reaper one line per argument: verb and the argument.
// An empty argument, or one with blanks, is not sent.
func tell(verb string, args ...string) {
	reaperMu.Lock()
	defer reaperMu.Unlock()
	w := reaper()
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \n\t") {
			continue
		}
		_, _ = fmt.Fprintf(w, "%s %s\n", verb, a)
	}
}

// pidArgs renders pids for tell; 0 or less is not a process (kill would
// read 0 as its own process group).
func pidArgs(pids []int) []string {
	var out []string
	for _, pid := range pids {
		if pid > 0 {
			out = append(out, strconv.Itoa(pid))
		}
	}
	return out
}

// reapOnExit has the reaper kill pids and remove dirs should the binary end
// before they are stopped and removed.
func reapOnExit(pids []int, dirs ...string) {
	tell("kill", pidArgs(pids)...)
	tell("rm", dirs...)
}

// quitOnExit is reapOnExit for a server that ends its children when asked
// (SIGQUIT) and would leave them behind were it killed.
func quitOnExit(pids []int, dirs ...string) {
	tell("quit", pidArgs(pids)...)
	tell("rm", dirs...)
}

// stoppedInOrder tells the reaper that pids were stopped and waited for.
func stoppedInOrder(pids []int) { tell("forget", pidArgs(pids)...) }

// children returns the processes whose parent is this one, by reading /proc.
func children() []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	self := os.Getpid()
	var out []int
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil && ppid == self {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path))); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// newChildren returns the children of this process not in before.
func newChildren(before []int) []int {
	return slices.DeleteFunc(children(), func(pid int) bool { return slices.Contains(before, pid) })
}
