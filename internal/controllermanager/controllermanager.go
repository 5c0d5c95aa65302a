// Package controllermanager starts kube-controller-manager against an
// envtest control plane, for what envtest alone never does: garbage
// collection of owned objects, namespace deletion, quota use, role
// aggregation. The tests (internal/testenv) and `profilekit local` start it
// the same way.
package controllermanager

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

// Binary is kube-controller-manager's file name in the assets folder, built
// by make (make kube-controller-manager, make envtest-assets).
const Binary = "kube-controller-manager"

// Options say what to start.
type Options struct {
	// Assets is the folder that holds Binary.
	Assets string
	// Env is the running control plane to manage.
	Env *envtest.Environment
	// Controllers are the controllers to run (--controllers).
	Controllers []string
	// Args are further flags.
	Args []string
	// Dir is where its own folder (kubeconfig, log) is made; default the
	// system's temporary folder.
	Dir string
}

// Process is a running kube-controller-manager.
type Process struct {
	cmd  *exec.Cmd
	dir  string
	log  string
	done chan error
}

// Start starts kube-controller-manager from o.Assets against o.Env's API
// server, as a member of system:masters, in a process group of its own (a
// Ctrl-C in a terminal reaches the caller alone, which stops it in order),
// and, on Linux, ended with SIGTERM should the caller's thread die first. It signs
// service-account tokens with the key envtest made for the API server,
// whose public half the API server already checks tokens with. A process
// that exits within its first second is reported with the end of its log.
func Start(o Options) (*Process, error) {
	bin := filepath.Join(o.Assets, Binary)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s not found in %s: run `make envtest-assets` (or `make kube-controller-manager`), which builds it from source", Binary, o.Assets)
	}
	user, err := o.Env.AddUser(envtest.User{Name: "system:kube-controller-manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(o.Dir, "kube-controller-manager-")
	if err != nil {
		return nil, err
	}
	p, err := start(bin, dir, kubeconfig, o)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	return p, nil
}

func start(bin, dir string, kubeconfig []byte, o Options) (*Process, error) {
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--kubeconfig=" + kc,
		"--controllers=" + strings.Join(o.Controllers, ","),
		"--service-account-private-key-file=" + filepath.Join(o.Env.ControlPlane.APIServer.CertDir, "sa-signer.key"),
		"--leader-elect=false",
		// No serving port: several control planes may run at once.
		"--secure-port=0",
	}, o.Args...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start kube-controller-manager: %w", err)
	}
	p := &Process{cmd: cmd, dir: dir, log: logFile.Name(), done: make(chan error, 1)}
	go func() {
		p.done <- cmd.Wait()
		logFile.Close()
	}()
	// A controller manager that cannot start exits at once; give it a moment
	// to say so rather than let the caller wait for work that never comes.
	select {
	case err := <-p.done:
		log, _ := os.ReadFile(p.log)
		return nil, fmt.Errorf("kube-controller-manager exited: %v\n%s", err, tail(string(log), 2000))
	case <-time.After(time.Second):
	}
	return p, nil
}

// Pid is the controller manager's process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Dir is the controller manager's own folder, which Stop removes.
func (p *Process) Dir() string { return p.dir }

// Stop ends the controller manager (SIGTERM, then SIGKILL after ten
// seconds) and removes its folder. Call it once; a nil Process has
// nothing to stop.
func (p *Process) Stop() error {
	if p == nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		err = <-p.done
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		// Ended by our signal: the expected end.
		err = nil
	}
	return errors.Join(err, os.RemoveAll(p.dir))
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
