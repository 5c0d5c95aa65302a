// Package testenv starts the real control plane profilekit's tests run
// against: a kube-apiserver and etcd built from source by make, with the
// Profile CRD (and any others a test asks for) installed.
//
// Tests start one Env per package in TestMain with Main, and give every test
// its own Profile. When the binaries are missing, Main fails with a message
// that says to run make test; it never skips.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	istioscheme "istio.io/client-go/pkg/clientset/versioned/scheme"

	"github.com/profilekit/profilekit/api/kubeflow"
	"github.com/profilekit/profilekit/internal/controllermanager"
	"github.com/profilekit/profilekit/plugins/outside"
)

// AssetsVersion names the folder under bin/k8s that make fills with
// kube-apiserver and etcd. Keep it in step with the Makefile.
const AssetsVersion = "1.36.3-etcd3.6.6"

// Env is a running control plane.
type Env struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Client is an uncached client with Scheme.
	Client client.Client
	// Scheme knows the built-in kinds and the Profile API.
	Scheme *k8sruntime.Scheme

	env  *envtest.Environment
	cm   *controllermanager.Process
	stop func() error
	// pids are the servers' processes, which the reaper ends should the
	// binary die before it stops them (see reaper.go).
	pids []int
}

// Options says what to install besides the Profile CRD.
type Options struct {
	// CRDPaths are extra files or folders of CRD YAML.
	CRDPaths []string
	// CRDs are extra CRD objects.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// AddToScheme registers extra types with the Env's scheme.
	AddToScheme []func(*k8sruntime.Scheme) error
	// Istio installs the real Istio CRDs (see IstioCRDs), so that the API
	// server validates every Istio object a test writes.
	Istio bool
	// ControllerManager also starts kube-controller-manager (see
	// ControllerManagerControllers), so that owner references, namespace
	// deletion and service-account tokens work as in a cluster.
	ControllerManager bool
	// ExtraControllers are kube-controller-manager controllers to run
	// besides ControllerManagerControllers, such as
	// "resourcequota-controller" (which then syncs every few seconds, see
	// controllerFlags). Any implies ControllerManager.
	ExtraControllers []string
	// ArgoCD installs the real Argo CD CRDs (see ArgoCDCRDs).
	ArgoCD bool
	// Webhooks are registered with the API server, pointed at a local
	// serving address and CA (see Env.Webhook).
	Webhooks []*admissionregistrationv1.ValidatingWebhookConfiguration
	// AdmissionPlugins are turned on besides the API server's defaults,
	// such as OwnerReferencesPermissionEnforcement, which some clusters
	// run: an owner reference that blocks its owner's deletion then needs
	// update on the owner's finalizers.
	AdmissionPlugins []string
}

// RepoRoot returns the root of the profilekit source tree.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// AssetsDir returns the folder that holds kube-apiserver and etcd:
// KUBEBUILDER_ASSETS when set, else bin/k8s/<AssetsVersion> in the source tree.
// It fails with a message that names make test when a binary is missing.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "bin", "k8s", AssetsVersion)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("%s not found in %s: run `make test` (or `make envtest-assets`), which builds kube-apiserver and etcd from source", bin, dir)
		}
	}
	return dir, nil
}

// NewScheme returns a scheme with the built-in kinds, the Profile API and extras.
func NewScheme(extra ...func(*k8sruntime.Scheme) error) (*k8sruntime.Scheme, error) {
	s := k8sruntime.NewScheme()
	errs := []error{clientgoscheme.AddToScheme(s), kubeflow.AddToScheme(s), apiextensionsv1.AddToScheme(s), istioscheme.AddToScheme(s)}
	for _, add := range extra {
		errs = append(errs, add(s))
	}
	return s, errors.Join(errs...)
}

// defaultNamespaceWait bounds the wait for the API server's default
// namespace once envtest's own 5 s have passed.
const defaultNamespaceWait = 2 * time.Minute

// waitDefaultNamespace waits until the API server at cfg serves the
// default namespace, for at most timeout.
func waitDefaultNamespace(cfg *rest.Config, timeout time.Duration) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = c.Get(ctx, client.ObjectKey{Name: metav1.NamespaceDefault}, &corev1.Namespace{})
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the default namespace after %s: %w", timeout, errors.Join(err, last))
	}
	return nil
}

// Start starts a control plane and installs the CRDs.
func Start(opts Options) (*Env, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	s, err := NewScheme(opts.AddToScheme...)
	if err != nil {
		return nil, err
	}
	if opts.Istio {
		crds, err := IstioCRDs()
		if err != nil {
			return nil, err
		}
		opts.CRDPaths = append(opts.CRDPaths, crds)
	}
	if opts.ArgoCD {
		dir, err := ArgoCDCRDs()
		if err != nil {
			return nil, err
		}
		opts.CRDPaths = append(opts.CRDPaths, dir)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     append([]string{filepath.Join(RepoRoot(), "api", "kubeflow", "crd")}, opts.CRDPaths...),
		CRDs:                  opts.CRDs,
		ErrorIfCRDPathMissing: true,
		// envtest's own default (20 s) is too short for etcd and the API
		// server on a loaded machine.
		ControlPlaneStartTimeout: StartTimeout,
		Scheme:                   s,
		WebhookInstallOptions:    envtest.WebhookInstallOptions{ValidatingWebhooks: opts.Webhooks},
	}
	if len(opts.AdmissionPlugins) > 0 {
		env.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", strings.Join(opts.AdmissionPlugins, ","))
	}
	before := children()
	cfg, err := env.Start()
	if err != nil && env.Config != nil && strings.Contains(err.Error(), "default namespace didn't register") {
		// envtest gives the API server 5 s to make the default namespace,
		// which a loaded machine (the harness runs packages side by side)
		// can pass. The control plane is up: wait longer, then let envtest
		// go on from there against it as an existing cluster.
		if err = waitDefaultNamespace(env.Config, defaultNamespaceWait); err == nil {
			env.UseExistingCluster = ptr.To(true)
			cfg, err = env.Start()
			env.UseExistingCluster = ptr.To(false)
		}
	}
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("start control plane from %s: %w", assets, err)
	}
	pids := newChildren(before)
	reapOnExit(pids, env.ControlPlane.APIServer.CertDir, env.ControlPlane.Etcd.DataDir, env.WebhookInstallOptions.LocalServingCertDir)
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	e := &Env{Config: cfg, Client: c, Scheme: s, env: env, pids: pids}
	// The host's own namespace, which holds the outside-state records, is
	// there before any host runs, as a deployment makes it.
	records := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: outside.DefaultRecordsNamespace}}
	if err := c.Create(context.Background(), records); err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("create namespace %s: %w", records.Name, err)
	}
	if opts.ControllerManager || len(opts.ExtraControllers) > 0 {
		controllers := append(slices.Clone(ControllerManagerControllers), opts.ExtraControllers...)
		if e.cm, err = startControllerManager(assets, env, controllers); err != nil {
			_ = env.Stop()
			return nil, err
		}
		reapOnExit([]int{e.cm.Pid()}, e.cm.Dir())
		e.pids = append(e.pids, e.cm.Pid())
	}
	e.stop = stopBeforeTimeout(func() error {
		err := errors.Join(e.cm.Stop(), e.env.Stop())
		if err == nil {
			stoppedInOrder(e.pids)
		}
		return err
	})
	return e, nil
}

// Stop stops the control plane; it stops by itself shortly before the test
// binary's -timeout (see stopBeforeTimeout).
func (e *Env) Stop() error { return e.stop() }

// Main is the body of a package's TestMain: it starts an Env into *env, runs
// the tests, stops the Env and exits with the tests' code. A control plane
// that cannot start fails the package with the reason. m is the package's
// *testing.M, or a Runner around it that checks more once the tests ran.
func Main(m Runner, env **Env, opts Options) {
	if fuzzWorker() {
		// A fuzz worker runs fuzz targets only, which need no control plane;
		// starting one per worker would leave etcds behind at every restart.
		os.Exit(m.Run())
	}
	e, err := Start(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stop: %v\n", err)
	}
	os.Exit(code)
}

// Runner runs a package's tests and returns their exit code, as
// *testing.M does.
type Runner interface{ Run() int }

// RunnerFunc is a Runner of a function.
type RunnerFunc func() int

// Run calls f.
func (f RunnerFunc) Run() int { return f() }

// fuzzWorker reports whether this test binary runs as a worker of go test -fuzz.
func fuzzWorker() bool {
	return slices.ContainsFunc(os.Args[1:], func(a string) bool { return strings.HasPrefix(a, "-test.fuzzworker") })
}
