package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the unit of the CPU times in /proc (USER_HZ), 100 on every
// Linux this runs on.
const clockTicks = 100

// cpuSample is a reading of CPU time: this process (the host and the
// benchmark's client), its child processes by name (kube-apiserver, etcd),
// and the whole machine's busy time.
type cpuSample struct {
	at      time.Time
	procs   map[string]float64
	machine float64
	// allocated is the bytes this process has allocated on its heap so far.
	allocated uint64
}

// sampleCPU reads the CPU seconds used so far. The processes that are not
// this one or its children (other work on the machine) show as the
// machine's busy time less ours.
func sampleCPU() (cpuSample, error) {
	s := cpuSample{at: time.Now(), procs: map[string]float64{}, allocated: heapAllocated()}
	self := os.Getpid()
	_, _, cpu, err := procStat(filepath.Join("/proc", "self", "stat"))
	if err != nil {
		return s, err
	}
	s.procs["host+bench"] = cpu
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		comm, ppid, cpu, err := procStat(d)
		if err != nil || ppid != self {
			continue
		}
		s.procs[comm] += cpu
	}
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s, fmt.Errorf("read /proc/stat: %w", err)
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(line))
	// cpu user nice system idle iowait irq softirq steal ...
	for i, v := range f[1:] {
		if i == 3 || i == 4 {
			continue
		}
		n, _ := strconv.ParseFloat(v, 64)
		s.machine += n / clockTicks
	}
	return s, nil
}

// procStat reads a process's command name, parent and CPU seconds (user and
// system) from its /proc stat file.
func procStat(path string) (string, int, float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", 0, 0, err
	}
	open, closing := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || closing < open {
		return "", 0, 0, fmt.Errorf("%s: unexpected format", path)
	}
	comm := string(data[open+1 : closing])
	f := strings.Fields(string(data[closing+1:]))
	if len(f) < 13 {
		return "", 0, 0, fmt.Errorf("%s: unexpected format", path)
	}
	ppid, _ := strconv.Atoi(f[1])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return comm, ppid, (ut + st) / clockTicks, nil
}

// CPU is the CPU time spent during a phase, in seconds, by this process
// (host and benchmark client), kube-apiserver, etcd and everything else on
// the machine, next to what the machine could give (wall time x CPUs).
type CPU struct {
	HostAndBench float64 `json:"hostAndBench"`
	APIServer    float64 `json:"kubeApiserver"`
	Etcd         float64 `json:"etcd"`
	Other        float64 `json:"otherProcesses"`
	Capacity     float64 `json:"capacity"`
	BusyShare    float64 `json:"busyShare"`
	// AllocatedMiB is what this process (the host, when it runs in it,
	// and the benchmark's client) allocated on its heap during the phase.
	AllocatedMiB float64 `json:"allocatedMiB,omitempty"`
}

// cpuSince returns the CPU time spent since s.
func cpuSince(s cpuSample) CPU {
	now, err := sampleCPU()
	if err != nil {
		return CPU{}
	}
	d := func(k string) float64 { return now.procs[k] - s.procs[k] }
	c := CPU{
		HostAndBench: d("host+bench"),
		APIServer:    d("kube-apiserver"),
		Etcd:         d("etcd"),
		Capacity:     now.at.Sub(s.at).Seconds() * float64(runtime.NumCPU()),
		AllocatedMiB: mib(now.allocated - s.allocated),
	}
	machine := now.machine - s.machine
	c.Other = max(0, machine-c.HostAndBench-c.APIServer-c.Etcd)
	if c.Capacity > 0 {
		c.BusyShare = machine / c.Capacity
	}
	return c
}

func (c CPU) String() string {
	return fmt.Sprintf("CPU s: host+bench %.1f, kube-apiserver %.1f, etcd %.1f, other processes %.1f; machine %.0f%% busy; host+bench allocated %.0f MiB",
		c.HostAndBench, c.APIServer, c.Etcd, c.Other, 100*c.BusyShare, c.AllocatedMiB)
}

// heapAllocated returns the bytes this process has allocated on its heap
// since it started (runtime/metrics, which stops no goroutine).
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
