package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// OPA is a real Open Policy Agent server, built from source by make, serving
// its REST API on a free loopback port.
type OPA struct {
	// URL is the server's base address, such as http://127.0.0.1:41234.
	URL  string
	proc *process
}

// StartOPA starts an OPA server that loads the given policy and data files.
// It fails with a message naming make test when the binary is missing.
func StartOPA(files ...string) (*OPA, error) {
	bin, err := tool("opa", "opa")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	url := "http://" + hostPort(port)
	args := append([]string{"run", "--server", "--addr", hostPort(port), "--log-level", "error", "--disable-telemetry"}, files...)
	o := &OPA{URL: url, proc: &process{name: "opa", path: bin, args: args, ready: httpReady(url + "/health")}}
	if err := o.proc.start(); err != nil {
		return nil, err
	}
	return o, nil
}

// Stop stops the server. Start brings it back on the same address; data and
// policies pushed through the API are lost, files given to StartOPA are not.
func (o *OPA) Stop() error { return o.proc.stop() }

// Start starts a stopped server again on the same address.
func (o *OPA) Start() error { return o.proc.start() }

// PutData replaces the document at path (slash-separated, such as
// "storage/buckets") with v.
func (o *OPA) PutData(ctx context.Context, path string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return o.put(ctx, "/v1/data/"+strings.Trim(path, "/"), "application/json", body)
}

// PutRawData replaces the document at path with body as it is, valid JSON or not.
func (o *OPA) PutRawData(ctx context.Context, path string, body []byte) error {
	return o.put(ctx, "/v1/data/"+strings.Trim(path, "/"), "application/json", body)
}

// PutPolicy creates or replaces the policy module id.
func (o *OPA) PutPolicy(ctx context.Context, id string, rego []byte) error {
	return o.put(ctx, "/v1/policies/"+id, "text/plain", rego)
}

func (o *OPA) put(ctx context.Context, path, contentType string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, o.URL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("opa PUT %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("opa PUT %s: %s: %s", path, resp.Status, msg)
	}
	return nil
}
