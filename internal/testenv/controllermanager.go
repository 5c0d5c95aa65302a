package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControllerManagerBinary is kube-controller-manager's file name in the
// assets folder, built by make (make kube-controller-manager).
const ControllerManagerBinary = "kube-controller-manager"

// ControllerManagerControllers are the controllers the test control plane
// runs: garbage collection (owner references), namespace deletion,
// service-account tokens, and persistent-volume binding with pvc- and
// pv-protection.
var ControllerManagerControllers = []string{
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-token-controller",
	"persistentvolume-binder-controller",
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
}

// controllerFlags are the flags a controller gets when a test asks for it
// in Options.ExtraControllers: short periods, so that tests see its work
// within seconds.
var controllerFlags = map[string][]string{
	"resourcequota-controller": {
		// A full recount of every quota every few seconds; changes to a
		// quota's spec and deleted pods are synced at once regardless.
		"--resource-quota-sync-period=5s",
		"--concurrent-resource-quota-syncs=10",
		// The controller writes every quota's status: at the default
		// client rate of 20 QPS, 1,000 new quotas take 50 s.
		"--kube-api-qps=200",
		"--kube-api-burst=300",
	},
}

// controllerManager is a running kube-controller-manager.
type controllerManager struct {
	cmd  *exec.Cmd
	dir  string
	done chan error
}

// startControllerManager starts kube-controller-manager from assets against
// env's API server with the given controllers, as a member of system:masters. It signs service-account
// tokens with the key envtest made for the API server, whose public half the
// API server already checks tokens with.
func startControllerManager(assets string, env *envtest.Environment, controllers []string) (*controllerManager, error) {
	bin := filepath.Join(assets, ControllerManagerBinary)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s not found in %s: run `make test` (or `make kube-controller-manager`), which builds it from source", ControllerManagerBinary, assets)
	}
	user, err := env.AddUser(envtest.User{Name: "system:kube-controller-manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kube-controller-manager-")
	if err != nil {
		return nil, err
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + kc,
		"--controllers=" + strings.Join(controllers, ","),
		"--service-account-private-key-file=" + filepath.Join(env.ControlPlane.APIServer.CertDir, "sa-signer.key"),
		"--leader-elect=false",
		// No serving port: several test packages run at once.
		"--secure-port=0",
		// Short periods, so that tests see deletions within seconds.
		"--namespace-sync-period=10s",
		"--concurrent-gc-syncs=5",
		"--v=1",
	}
	for _, c := range controllers {
		args = append(args, controllerFlags[c]...)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start kube-controller-manager: %w", err)
	}
	cm := &controllerManager{cmd: cmd, dir: dir, done: make(chan error, 1)}
	go func() {
		cm.done <- cmd.Wait()
		logFile.Close()
	}()
	// A controller manager that cannot start exits at once; give it a moment
	// to say so rather than let tests wait for deletions that never come.
	select {
	case err := <-cm.done:
		cm.done <- err
		log, _ := os.ReadFile(logFile.Name())
		return nil, fmt.Errorf("kube-controller-manager exited: %v\n%s", err, tail(string(log), 2000))
	case <-time.After(time.Second):
	}
	return cm, nil
}

// stop ends the controller manager and removes its folder.
func (cm *controllerManager) stop() error {
	if cm == nil {
		return nil
	}
	_ = cm.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-cm.done:
	case <-time.After(10 * time.Second):
		_ = cm.cmd.Process.Kill()
		err = <-cm.done
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		// Killed by our signal: the expected end.
		err = nil
	}
	return errors.Join(err, os.RemoveAll(cm.dir))
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
