package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// PrometheusOperatorVersion is the Prometheus Operator release whose CRDs
// the tests install. Keep it in step with the Makefile.
const PrometheusOperatorVersion = "0.85.0"

// PrometheusOperatorCRDs returns the folder that make fills with the
// ServiceMonitor and PrometheusRule CRDs of the Prometheus Operator Go module,
// beside kube-apiserver and etcd. It fails with a message that names make
// test when they are missing.
func PrometheusOperatorCRDs() (string, error) {
	return assetsFolder("prometheus-operator-v"+PrometheusOperatorVersion, "monitoring.coreos.com_servicemonitors.yaml",
		"Prometheus Operator CRDs", "prometheus-crds", "the Prometheus Operator module")
}

// prometheusTool returns the path of prometheus or promtool, which make
// unpacks from Debian's prometheus package beside kube-apiserver and etcd,
// or an error that names make test.
func prometheusTool(name string) (string, error) {
	p := filepath.Join(toolsDir(), "prometheus", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found at %s: run `make test` (or `make prometheus`), which unpacks it from Debian's prometheus package", name, p)
	}
	return p, nil
}

// Promtool returns the path of promtool, for checking and unit testing rule
// files. It fails with a message naming make test when it is missing.
func Promtool() (string, error) { return prometheusTool("promtool") }

// RunPromtool runs promtool with args in dir and returns what it printed
// (stdout and stderr), and an error when it exits with a failure.
func RunPromtool(dir string, args ...string) (string, error) {
	bin, err := Promtool()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("promtool %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// ScrapeTarget is a static scrape target of StartPrometheus: the job, its
// host:port, and the target labels a service discovery would have added
// (namespace, pod, ...).
type ScrapeTarget struct {
	Job     string
	Address string
	Labels  map[string]string
}

// Prometheus is a Prometheus server on a free loopback port, with its
// storage in a temporary folder, that scrapes its targets every second.
type Prometheus struct {
	// URL is the server's address, such as http://127.0.0.1:41234; its
	// HTTP API is under /api/v1.
	URL string

	dir  string
	proc *process
}

// StartPrometheus writes a configuration that scrapes targets every second
// and starts the server. It fails with a message naming make test when the
// binary is missing.
func StartPrometheus(targets ...ScrapeTarget) (*Prometheus, error) {
	bin, err := prometheusTool("prometheus")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "prometheus-")
	if err != nil {
		return nil, err
	}
	var jobs []map[string]any
	for _, tg := range targets {
		jobs = append(jobs, map[string]any{
			"job_name":       tg.Job,
			"static_configs": []any{map[string]any{"targets": []string{tg.Address}, "labels": tg.Labels}},
		})
	}
	// JSON is YAML: the configuration needs no YAML library.
	cfg, err := json.Marshal(map[string]any{
		"global":         map[string]any{"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
		"scrape_configs": jobs,
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p := &Prometheus{URL: "http://" + hostPort(port), dir: dir}
	p.proc = &process{
		name: "prometheus",
		path: bin,
		args: []string{
			"--config.file=" + cfgPath,
			"--storage.tsdb.path=" + filepath.Join(dir, "data"),
			"--web.listen-address=" + hostPort(port),
			"--log.level=warn",
		},
		ready: httpReady(p.URL + "/-/ready"),
	}
	if err := p.proc.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return p, nil
}

// Close stops the server and removes its storage.
func (p *Prometheus) Close() error {
	err := p.proc.stop()
	os.RemoveAll(p.dir)
	return err
}
