package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ExternalOptions measure another controller, started as a command, on a
// control plane of its own: the same mix of objects per tenant that a
// profilekit run converges, made by whatever the other controller reads
// (its own tenant kind, say), so that both can be compared side by side.
type ExternalOptions struct {
	// AssetsDir holds kube-apiserver and etcd.
	AssetsDir string
	// Command starts the controller; "{kubeconfig}" in an argument becomes
	// the path of an administrator's kubeconfig, which KUBECONFIG names too.
	Command []string
	// Tenants is how many tenants to converge.
	Tenants int
	// Template is a YAML file of one tenant's input, several documents
	// allowed, each rendered with text/template for each tenant once the
	// documents before it are created: {{.Name}} is the tenant's name,
	// {{.Index}} its number, {{.UIDs.Tenant}} the uid of its object of kind
	// Tenant created before (for an owner reference).
	Template string
	// Namespace is a template of the namespace that holds a tenant's
	// objects; default "{{.Name}}".
	Namespace string
	// Want is how many objects of each resource ("networkpolicies",
	// "rolebindings.rbac.authorization.k8s.io") a tenant's namespace holds
	// once converged.
	Want map[string]int
	// CRDs are files or folders of CustomResourceDefinitions to install
	// before the controller starts.
	CRDs []string
	// Workers create the tenants' input at once.
	Workers int
	// Idle is how long the writes of the converged, idle controller are
	// counted.
	Idle time.Duration
	// Timeout bounds the whole run; default 30 minutes.
	Timeout time.Duration
	Out     io.Writer
	// ResultsDir receives the result as JSON; empty for none.
	ResultsDir string
	// WorkDir receives the kubeconfig and the controller's log; default a
	// new temporary folder, kept for the log.
	WorkDir string
}

// ExternalResult is what one run of another controller measured.
type ExternalResult struct {
	Started time.Time `json:"started"`
	Command []string  `json:"command"`
	Tenants int       `json:"tenants"`
	// Objects is the tenants' wanted objects, all of them there at the end.
	Objects          int     `json:"objects"`
	Seconds          float64 `json:"seconds"`
	ObjectsPerSecond float64 `json:"objectsPerSecond"`
	// Mutating are the API server's mutating requests during convergence,
	// by verb and resource, less the benchmark's own and lease renewals.
	Mutating          map[string]int `json:"mutating"`
	MutatingPerObject float64        `json:"mutatingPerObject"`
	// IdleWritesPerMinute and IdleStatusWritesPerMinute are the mutating
	// requests (leases left out), and those of a status subresource, per
	// minute once converged and with nothing changing.
	IdleWritesPerMinute       float64 `json:"idleWritesPerMinute"`
	IdleStatusWritesPerMinute float64 `json:"idleStatusWritesPerMinute"`
	// ControllerCPUSeconds is the CPU the command's process spent during
	// convergence.
	ControllerCPUSeconds float64 `json:"controllerCpuSeconds"`
}

// RunExternal measures the controller o.Command starts: it creates
// o.Tenants tenants from o.Template (after one more, "warmup", has
// converged) and times them until every tenant's namespace holds o.Want,
// then counts its writes while idle.
func RunExternal(ctx context.Context, o ExternalOptions) (*ExternalResult, error) {
	if o.Tenants <= 0 || len(o.Command) == 0 || len(o.Want) == 0 || o.Template == "" {
		return nil, errors.New("external: a command, a template, a positive number of tenants and at least one wanted resource are needed")
	}
	o.Workers, o.Namespace, o.Timeout = cmp.Or(o.Workers, 16), cmp.Or(o.Namespace, "{{.Name}}"), cmp.Or(o.Timeout, 30*time.Minute)
	text, err := os.ReadFile(o.Template)
	if err != nil {
		return nil, err
	}
	docs, err := parseDocuments(string(text))
	if err != nil {
		return nil, err
	}
	nsOf, err := template.New("namespace").Option("missingkey=error").Parse(o.Namespace)
	if err != nil {
		return nil, fmt.Errorf("namespace template: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	env := &envtest.Environment{BinaryAssetsDirectory: o.AssetsDir, CRDDirectoryPaths: o.CRDs, ErrorIfCRDPathMissing: true}
	if _, err := env.Start(); err != nil {
		return nil, fmt.Errorf("start the control plane: %w", err)
	}
	defer func() { _ = env.Stop() }()
	x, err := newExternal(env, o, docs, nsOf)
	if err != nil {
		return nil, err
	}
	stop, err := x.startController(ctx)
	if err != nil {
		return nil, err
	}
	defer stop()
	return x.measure(ctx)
}

// external is one run's clients and templates.
type external struct {
	o          ExternalOptions
	docs       []*template.Template
	ns         *template.Template
	dyn        dynamic.Interface
	meta       metadata.Interface
	cs         kubernetes.Interface
	mapper     *restmapper.DeferredDiscoveryRESTMapper
	own        *counter
	kubeconfig []byte
	pid        int
}

func newExternal(env *envtest.Environment, o ExternalOptions, docs []*template.Template, ns *template.Template) (*external, error) {
	x := &external{o: o, docs: docs, ns: ns, own: newCounter(), kubeconfig: env.KubeConfig}
	rc := x.own.wrap(rest.CopyConfig(env.Config))
	rc.QPS, rc.Burst = driverQPS, driverBurst
	var err error
	if x.dyn, err = dynamic.NewForConfig(rc); err != nil {
		return nil, err
	}
	if x.meta, err = metadata.NewForConfig(rc); err != nil {
		return nil, err
	}
	if x.cs, err = kubernetes.NewForConfig(env.Config); err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	x.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	return x, nil
}

// startController starts the command with the kubeconfig and returns what
// stops it.
func (x *external) startController(ctx context.Context) (func(), error) {
	dir := x.o.WorkDir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "profilekit-bench-external-"); err != nil {
			return nil, err
		}
	}
	kc, logPath := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "controller.log")
	if err := os.WriteFile(kc, x.kubeconfig, 0o600); err != nil {
		return nil, err
	}
	args := slices.Clone(x.o.Command)
	for i := range args {
		args[i] = strings.ReplaceAll(args[i], "{kubeconfig}", kc)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...) //nolint:gosec // the operator's own command, on its own control plane
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kc)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start the controller: %w", err)
	}
	x.pid = cmd.Process.Pid
	fmt.Fprintf(x.o.Out, "controller started (pid %d), its log in %s\n", x.pid, logPath)
	return func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logFile.Close()
	}, nil
}

// measure converges a warm-up tenant, then the tenants on the clock, then
// counts the idle writes.
func (x *external) measure(ctx context.Context) (*ExternalResult, error) {
	res := &ExternalResult{Started: time.Now().UTC(), Command: x.o.Command, Tenants: x.o.Tenants}
	warm := tenantOf(-1)
	if err := x.create(ctx, warm); err != nil {
		return nil, err
	}
	if err := x.waitConverged(ctx, []tenant{warm}); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	tenants := make([]tenant, x.o.Tenants)
	for i := range tenants {
		tenants[i] = tenantOf(i)
	}
	before, err := serverCounts(ctx, x.cs)
	if err != nil {
		return nil, err
	}
	ownBefore, cpuBefore := x.own.snapshot(), x.controllerCPU()
	start := time.Now()
	if err := parallel(ctx, len(tenants), x.o.Workers, func(ctx context.Context, i int) error { return x.create(ctx, tenants[i]) }); err != nil {
		return nil, err
	}
	if err := x.waitConverged(ctx, tenants); err != nil {
		return nil, err
	}
	res.Seconds = time.Since(start).Seconds()
	res.ControllerCPUSeconds = x.controllerCPU() - cpuBefore
	// Writes the controller sends after the last object (a status, an
	// Event) are part of converging: let them land.
	time.Sleep(2 * time.Second)
	after, err := serverCounts(ctx, x.cs)
	if err != nil {
		return nil, err
	}
	perTenant := 0
	for _, n := range x.o.Want {
		perTenant += n
	}
	res.Objects = perTenant * x.o.Tenants
	res.ObjectsPerSecond = float64(res.Objects) / res.Seconds
	theirs := withoutLeases(after.minus(before).minus(x.own.snapshot().minus(ownBefore)))
	res.Mutating = map[string]int{}
	for k, v := range theirs {
		if mutatingVerbs[k.Verb] && !reviews[k.Resource] {
			res.Mutating[k.Verb+" "+k.Resource] = v
		}
	}
	res.MutatingPerObject = float64(theirs.mutating()) / float64(res.Objects)
	if err := x.idle(ctx, res); err != nil {
		return nil, err
	}
	x.print(res)
	return res, x.save(res)
}

// idle counts the writes of the converged controller over o.Idle.
func (x *external) idle(ctx context.Context, res *ExternalResult) error {
	if x.o.Idle <= 0 {
		return nil
	}
	before, err := serverCounts(ctx, x.cs)
	if err != nil {
		return err
	}
	own := x.own.snapshot()
	time.Sleep(x.o.Idle)
	after, err := serverCounts(ctx, x.cs)
	if err != nil {
		return err
	}
	theirs := withoutLeases(after.minus(before).minus(x.own.snapshot().minus(own)))
	status := counts{}
	for k, v := range theirs {
		if strings.HasSuffix(k.Resource, "/status") {
			status[k] = v
		}
	}
	minutes := x.o.Idle.Minutes()
	res.IdleWritesPerMinute = float64(theirs.mutating()) / minutes
	res.IdleStatusWritesPerMinute = float64(status.mutating()) / minutes
	return nil
}

// withoutLeases leaves out lease renewals: the API server's own and any
// leader election's, the same with or without a controller at work.
func withoutLeases(c counts) counts {
	out := counts{}
	for k, v := range c {
		if k.Resource != "leases" {
			out[k] = v
		}
	}
	return out
}

// controllerCPU reads the CPU seconds the controller's process has spent.
func (x *external) controllerCPU() float64 {
	_, _, s, err := procStat("/proc/" + strconv.Itoa(x.pid) + "/stat")
	if err != nil {
		return 0
	}
	return s
}

func (x *external) print(res *ExternalResult) {
	keys := slices.Sorted(maps.Keys(res.Mutating))
	var by []string
	for _, k := range keys {
		by = append(by, fmt.Sprintf("%s %d", k, res.Mutating[k]))
	}
	fmt.Fprintf(x.o.Out, "%d tenants, %d objects converged in %.1f s: %.0f objects/s\n", res.Tenants, res.Objects, res.Seconds, res.ObjectsPerSecond)
	fmt.Fprintf(x.o.Out, "mutating requests per object: %.2f (%s)\n", res.MutatingPerObject, strings.Join(by, ", "))
	fmt.Fprintf(x.o.Out, "idle over %s: %.1f writes per minute, %.1f of them status writes\n", x.o.Idle, res.IdleWritesPerMinute, res.IdleStatusWritesPerMinute)
	fmt.Fprintf(x.o.Out, "controller CPU during convergence: %.2f s (%.2f ms per object)\n", res.ControllerCPUSeconds, 1000*res.ControllerCPUSeconds/float64(res.Objects))
}

func (x *external) save(res *ExternalResult) error {
	if x.o.ResultsDir == "" {
		return nil
	}
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(x.o.ResultsDir, fmt.Sprintf("external-%s-n%d.json", res.Started.Format("20060102T150405Z"), res.Tenants))
	fmt.Fprintf(x.o.Out, "saved %s\n", path)
	return os.WriteFile(path, append(raw, '\n'), 0o600)
}
