package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// PostgresBinDirs are searched, in order, for initdb and pg_ctl when
// PG_BIN is not set: the Debian package's folder first, then PATH.
var PostgresBinDirs = []string{"/usr/lib/postgresql/15/bin"}

// Postgres is a private PostgreSQL server for tests: its own data folder in
// a temporary directory, listening on a free loopback port, with TLS from a
// test CA so that clients can verify the server (sslmode=verify-full).
type Postgres struct {
	// Host and Port are where the server listens (127.0.0.1).
	Host string
	Port int
	// User and Password are the superuser's.
	User     string
	Password string
	// CA is the PEM of the CA that signed the server certificate.
	CA []byte

	bin   string
	dir   string
	data  string
	cred  *syscall.Credential
	close func() error
	pid   int // the server's, while it runs
}

// StartPostgres initialises a data folder under a new temporary directory
// and starts the server. Run as root, it runs the server as the postgres
// user, which PostgreSQL requires. A missing server names make test.
func StartPostgres() (*Postgres, error) {
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "profilekit-postgres-")
	if err != nil {
		return nil, err
	}
	p := &Postgres{Host: "127.0.0.1", User: "postgres", bin: bin, dir: dir, data: filepath.Join(dir, "data")}
	if err := p.init(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := p.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	// pg_ctl starts the server apart from this process: nothing else would
	// stop it when the tests run out of time.
	p.close = stopBeforeTimeout(func() error { return errors.Join(p.Stop(), os.RemoveAll(p.dir)) })
	return p, nil
}

func postgresBin() (string, error) {
	dirs := PostgresBinDirs
	if v := os.Getenv("PG_BIN"); v != "" {
		dirs = []string{v}
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("PostgreSQL's initdb not found in %s or PATH: run `make test` (or `make postgres-server`), which installs postgresql-15", strings.Join(dirs, ", "))
}

func (p *Postgres) init() error {
	pw := make([]byte, 18)
	if _, err := rand.Read(pw); err != nil {
		return err
	}
	p.Password = fmt.Sprintf("%x", pw)
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("running as root needs a postgres user to run the server: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	pwfile := filepath.Join(p.dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(p.Password+"\n"), 0o600); err != nil {
		return err
	}
	if err := p.chown(p.dir, pwfile); err != nil {
		return err
	}
	// No locale flags: a stock server takes its locale from the environment,
	// which is empty here, so the cluster is C/SQL_ASCII, the plainest case.
	if out, err := p.run("initdb", "-D", p.data, "-U", p.User, "--pwfile", pwfile,
		"--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync"); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	if err := p.writeTLS(); err != nil {
		return err
	}
	conf := strings.Join([]string{
		"listen_addresses = '127.0.0.1'",
		"unix_socket_directories = '" + p.dir + "'",
		"ssl = on",
		"ssl_cert_file = 'server.crt'",
		"ssl_key_file = 'server.key'",
		"fsync = off",
		"synchronous_commit = off",
		"full_page_writes = off",
		"shared_buffers = 16MB",
		"max_connections = 60",
		"log_min_messages = warning",
		"",
	}, "\n")
	f, err := os.OpenFile(filepath.Join(p.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(conf)
	return err
}

// writeTLS makes a CA and a server certificate for 127.0.0.1 and localhost.
func (p *Postgres) writeTLS() error {
	ca, caKey, caPEM, err := NewTestCA("profilekit test CA")
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	crt := filepath.Join(p.data, "server.crt")
	kf := filepath.Join(p.data, "server.key")
	if err := os.WriteFile(crt, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(kf, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	p.CA = caPEM
	return p.chown(crt, kf)
}

// NewTestCA returns a self-signed CA certificate, its key and its PEM.
func NewTestCA(name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

func (p *Postgres) chown(paths ...string) error {
	if p.cred == nil {
		return nil
	}
	for _, path := range paths {
		if err := os.Chown(path, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			return err
		}
	}
	return nil
}

func (p *Postgres) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	cmd.Env = []string{"PATH=" + p.bin + ":/usr/bin:/bin"}
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	return cmd.CombinedOutput()
}

// Start starts the server (again, after Stop) on a free port the first
// time and on the same port after that.
func (p *Postgres) Start() error {
	if p.Port == 0 {
		port, err := freePort()
		if err != nil {
			return err
		}
		p.Port = port
	}
	out, err := p.run("pg_ctl", "-D", p.data, "-l", filepath.Join(p.dir, "server.log"), "-w", "-t", strconv.Itoa(int(StartTimeout.Seconds())),
		"-o", "-p "+strconv.Itoa(p.Port), "start")
	if err != nil {
		logData, _ := os.ReadFile(filepath.Join(p.dir, "server.log"))
		return fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, logData)
	}
	// Apart from this process, the server would outlive a binary that
	// dies: the reaper ends it then (see reaper.go).
	p.pid = p.postmaster()
	quitOnExit([]int{p.pid}, p.dir)
	return nil
}

// postmaster returns the running server's process ID, 0 when unknown.
func (p *Postgres) postmaster() int {
	b, err := os.ReadFile(filepath.Join(p.data, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// Stop stops the server at once, closing every connection; Start brings it
// back with its data.
func (p *Postgres) Stop() error {
	out, err := p.run("pg_ctl", "-D", p.data, "-m", "immediate", "-w", "stop")
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	stoppedInOrder([]int{p.pid})
	return nil
}

// Close stops the server and removes its files; it closes by itself
// shortly before the test binary's -timeout.
func (p *Postgres) Close() error { return p.close() }

// DSN returns a connection URL for user and password to database over TLS
// with sslmode (verify-full, disable, ...). With verify-full, rootCertFile
// must hold the CA.
func (p *Postgres) DSN(user, password, database, sslmode, rootCertFile string) string {
	u := url.URL{
		Scheme: "postgres",
		User:   url.UserPassword(user, password),
		Host:   net.JoinHostPort(p.Host, strconv.Itoa(p.Port)),
		Path:   "/" + database,
	}
	q := url.Values{"sslmode": {sslmode}, "connect_timeout": {"5"}}
	if rootCertFile != "" {
		q.Set("sslrootcert", rootCertFile)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// AdminDSN is the superuser's DSN to the postgres database, with sslmode
// verify-full against host localhost and no root certificate file: callers
// pass the CA themselves.
func (p *Postgres) AdminDSN() string {
	return p.DSN(p.User, p.Password, "postgres", "verify-full", "")
}

func freePort() (int, error) {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
