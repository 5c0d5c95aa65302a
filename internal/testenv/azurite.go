package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// The emulator's own storage account and its published development key.
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Azurite is the Azure Storage emulator's blob service, installed by make,
// serving on a free loopback port with its data in a temporary folder.
type Azurite struct {
	// BlobURL is the account's blob endpoint, such as
	// http://127.0.0.1:41234/devstoreaccount1.
	BlobURL string
	// Account and Key are the shared key credentials of the account.
	Account, Key string
	// HTTPClient reaches the service: it trusts the test authority when the
	// service serves TLS.
	HTTPClient *http.Client

	dir  string
	proc *process
}

// AzuriteOption configures StartAzurite.
type AzuriteOption func(*azuriteOptions)

type azuriteOptions struct {
	tls *TLS
}

// WithOAuth serves the blob service over HTTPS with t's certificate and
// accepts bearer tokens (Azurite's basic OAuth: a token's issuer,
// audience and lifetime are checked, not its signature) beside the shared
// key.
func WithOAuth(t *TLS) AzuriteOption { return func(o *azuriteOptions) { o.tls = t } }

// StartAzurite starts the blob service. It fails with a message naming make
// test when Azurite or Node.js is missing.
func StartAzurite(opts ...AzuriteOption) (*Azurite, error) {
	var o azuriteOptions
	for _, opt := range opts {
		opt(&o)
	}
	bin, err := tool(filepath.Join("azurite", "node_modules", ".bin", "azurite-blob"), "azurite")
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("node"); err != nil {
		return nil, fmt.Errorf("azurite needs Node.js, which is not on PATH: install it, then run `make test`")
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "azurite-")
	if err != nil {
		return nil, err
	}
	// The server dies with the binary (see process.start); its folder
	// goes by the reaper.
	reapOnExit(nil, dir)
	scheme := "http"
	args := []string{"--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(port), "--location", dir,
		"--silent", "--skipApiVersionCheck", "--disableTelemetry"}
	hc := http.DefaultClient
	if o.tls != nil {
		scheme = "https"
		args = append(args, "--oauth", "basic", "--cert", o.tls.CertFile, "--key", o.tls.KeyFile)
		hc = o.tls.Client()
	}
	a := &Azurite{
		BlobURL:    fmt.Sprintf("%s://%s/%s", scheme, hostPort(port), AzuriteAccount),
		Account:    AzuriteAccount,
		Key:        AzuriteKey,
		HTTPClient: hc,
		dir:        dir,
	}
	a.proc = &process{
		name: "azurite",
		path: bin,
		args: args,
		// A request without credentials gets 403 once the service is up.
		ready: httpReadyWith(hc, a.BlobURL+"?comp=list"),
	}
	if err := a.proc.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return a, nil
}

// Stop stops the service; its data stay for Start.
func (a *Azurite) Stop() error { return a.proc.stop() }

// Start starts a stopped service again on the same port with the same data.
func (a *Azurite) Start() error { return a.proc.start() }

// Close stops the service and removes its data.
func (a *Azurite) Close() error {
	err := a.proc.stop()
	os.RemoveAll(a.dir)
	return err
}

// httpReadyWith says a server is up once it answers url below 500, asked
// through hc (a client that trusts the test authority).
func httpReadyWith(hc *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			return errors.New(resp.Status)
		}
		return nil
	}
}
