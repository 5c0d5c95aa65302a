package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// TLS is a certificate authority made for one test run and a serving
// certificate it signed for 127.0.0.1 and localhost, also written as PEM
// files for servers that read files (Azurite's --cert and --key).
type TLS struct {
	// CertFile and KeyFile hold the serving certificate and its key.
	CertFile, KeyFile string
	// Certificate is the serving certificate, for Go servers.
	Certificate tls.Certificate
	// Pool trusts the authority, for clients.
	Pool *x509.CertPool

	dir string
}

// NewTLS makes a certificate authority and a serving certificate.
func NewTLS() (*TLS, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make the test CA key: %w", err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "profilekit test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("make the test CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make the serving key: %w", err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("make the serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "testenv-tls-")
	if err != nil {
		return nil, err
	}
	t := &TLS{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem"), Certificate: cert, Pool: x509.NewCertPool(), dir: dir}
	t.Pool.AddCert(caCert)
	if err := os.WriteFile(t.CertFile, certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(t.KeyFile, keyPEM, 0o600); err != nil {
		return nil, err
	}
	return t, nil
}

// Client returns an HTTP client that trusts the authority.
func (t *TLS) Client() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: t.Pool, MinVersion: tls.VersionTLS12}}}
}

// Close removes the PEM files.
func (t *TLS) Close() error { return os.RemoveAll(t.dir) }

// TokenRequest is one token request the endpoint served or refused.
type TokenRequest struct {
	// Tenant is the tenant in the request's path.
	Tenant string
	// ClientID and Scope are the form's.
	ClientID, Scope string
	// Proof is how the client proved itself: "client_secret" or
	// "client_assertion" and the first 12 hex digits of the SHA-256 of
	// what it presented (never the value), or "none".
	Proof string
	// Issued says whether a token was issued.
	Issued bool
}

func (r TokenRequest) String() string {
	return fmt.Sprintf("POST /%s/oauth2/v2.0/token client_id=%s scope=%s proof=%s issued=%t", r.Tenant, r.ClientID, r.Scope, r.Proof, r.Issued)
}

// Digest is the form of a presented secret or assertion in Proof.
func Digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

// TokenEndpoint stands in for Microsoft Entra ID on loopback, over TLS: it
// serves the OpenID metadata and token paths that the Azure SDK asks for
// (with instance discovery off) and issues JWT-shaped access tokens for
// https://storage.azure.com that Azurite's basic OAuth accepts (its checks
// are the issuer, the audience and the lifetime, not the signature). It
// issues a token only to a client that presents what was registered for it.
type TokenEndpoint struct {
	// URL is the authority host, such as https://127.0.0.1:41234/.
	URL string

	srv     *httptest.Server
	mu      sync.Mutex
	clients map[string]string // client ID -> "client_secret:<digest>" or "client_assertion:<digest>"
	log     []TokenRequest
}

// StartTokenEndpoint serves the endpoint with tls's serving certificate.
func StartTokenEndpoint(t *TLS) *TokenEndpoint {
	e := &TokenEndpoint{clients: map[string]string{}}
	e.srv = httptest.NewUnstartedServer(http.HandlerFunc(e.serve))
	e.srv.TLS = &tls.Config{Certificates: []tls.Certificate{t.Certificate}, MinVersion: tls.VersionTLS12}
	e.srv.StartTLS()
	e.URL = e.srv.URL + "/"
	return e
}

// AddClientSecret registers a service principal and its client secret.
func (e *TokenEndpoint) AddClientSecret(clientID, secret string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clients[clientID] = "client_secret:" + Digest(secret)
}

// AddFederated registers a federated identity and the assertion (the
// service account token) it presents.
func (e *TokenEndpoint) AddFederated(clientID, assertion string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clients[clientID] = "client_assertion:" + Digest(assertion)
}

// Requests returns the token requests served so far.
func (e *TokenEndpoint) Requests() []TokenRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]TokenRequest(nil), e.log...)
}

// Close stops the endpoint.
func (e *TokenEndpoint) Close() { e.srv.Close() }

func (e *TokenEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	tenant, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	base := strings.TrimSuffix(e.URL, "/") + "/" + tenant
	switch {
	case r.Method == http.MethodGet && rest == "v2.0/.well-known/openid-configuration":
		writeJSON(w, http.StatusOK, map[string]string{
			"issuer":                 base + "/v2.0",
			"token_endpoint":         base + "/oauth2/v2.0/token",
			"authorization_endpoint": base + "/oauth2/v2.0/authorize",
		})
	case r.Method == http.MethodPost && rest == "oauth2/v2.0/token":
		e.token(w, r, tenant)
	default:
		http.NotFound(w, r)
	}
}

func (e *TokenEndpoint) token(w http.ResponseWriter, r *http.Request, tenant string) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	req := TokenRequest{Tenant: tenant, ClientID: r.PostForm.Get("client_id"), Scope: r.PostForm.Get("scope"), Proof: "none"}
	switch {
	case r.PostForm.Get("client_secret") != "":
		req.Proof = "client_secret:" + Digest(r.PostForm.Get("client_secret"))
	case r.PostForm.Get("client_assertion") != "":
		req.Proof = "client_assertion:" + Digest(r.PostForm.Get("client_assertion"))
	}
	e.mu.Lock()
	req.Issued = e.clients[req.ClientID] == req.Proof
	e.log = append(e.log, req)
	e.mu.Unlock()
	if !req.Issued {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": "the client's credentials are not the registered ones"})
		return
	}
	now := time.Now().Unix()
	claims := map[string]any{"aud": "https://storage.azure.com", "iss": "https://sts.windows.net/" + tenant + "/",
		"iat": now, "nbf": now, "exp": now + 3600, "appid": req.ClientID, "tid": tenant, "oid": req.ClientID, "sub": req.ClientID, "ver": "1.0"}
	writeJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer", "expires_in": 3600, "ext_expires_in": 3600, "access_token": jwtShaped(claims)})
}

// jwtShaped returns an unsigned token in JWT form: Azurite's basic OAuth
// decodes it without checking the signature.
func jwtShaped(claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." + enc(claims) + "." + base64.RawURLEncoding.EncodeToString([]byte("unsigned"))
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
