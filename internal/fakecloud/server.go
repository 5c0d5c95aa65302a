package fakecloud

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Request is one request a server received and what it answered.
type Request struct {
	// Method and URL (path and query) as received.
	Method, URL string
	// Call is the API operation, such as setIamPolicy, GetRole or
	// FederatedIdentityCredentials_Get.
	Call string
	// Body is the request body; a form-encoded one is shown a field a line.
	Body string
	// Status is the answer's status code, 0 when the server never answered.
	Status int
	// Answer is the answer's body.
	Answer string
}

// String returns the request, its body and the answer, a paragraph each.
func (r Request) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n  call: %s\n", r.Method, r.URL, r.Call)
	if r.Body != "" {
		fmt.Fprintf(&b, "  body:\n%s\n", indent(r.Body))
	}
	if r.Status == 0 {
		b.WriteString("  answer: none, the caller gave up\n")
	} else {
		fmt.Fprintf(&b, "  answer: %d %s\n%s\n", r.Status, http.StatusText(r.Status), indent(r.Answer))
	}
	return b.String()
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n")
}

// Log is the requests a server received, in order. It is safe for
// concurrent use.
type Log struct {
	mu   sync.Mutex
	reqs []Request
}

func (l *Log) add(r Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r)
}

// Requests returns the requests received so far.
func (l *Log) Requests() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

// Calls returns each request received so far as "<call> <status>", such as
// "setIamPolicy 409", for tests that compare sequences.
func (l *Log) Calls() []string {
	var out []string
	for _, r := range l.Requests() {
		out = append(out, fmt.Sprintf("%s %d", r.Call, r.Status))
	}
	return out
}

// WriteFile writes the log to path, making its folder.
func (l *Log) WriteFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var b strings.Builder
	for i, r := range l.Requests() {
		fmt.Fprintf(&b, "#%d %s\n", i+1, r)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// Fault is how a server answers a coming call in place of the API.
type Fault int

const (
	// Throttle answers as the API does to a caller over its rate limit:
	// Google and Azure with 429 and Retry-After: 1, AWS IAM with 400
	// Throttling.
	Throttle Fault = iota + 1
	// Hang sends no answer until the caller gives up.
	Hang
)

// reply is an answer: status, headers and body.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// api is what each cloud's server implements; server does the rest.
type api interface {
	// call names the operation of a request, or returns "" for one the API
	// does not have.
	call(r *http.Request, body []byte) string
	// answer carries out a call on the server's state.
	answer(call string, r *http.Request, body []byte) reply
	// throttled is the answer to a caller over its rate limit.
	throttled() reply
}

// server is the HTTP side that the three clouds share: the log, the faults
// and hooks queued for coming calls, and the httptest server.
type server struct {
	Log
	// URL is the server's base URL, such as http://127.0.0.1:41234.
	URL string

	api     api
	srv     *httptest.Server
	closing chan struct{}

	mu     sync.Mutex
	faults map[string][]Fault
	hooks  map[string][]func()
	// retryAfter replaces the Retry-After of throttling answers that carry
	// one (see RetryAfter).
	retryAfter string
}

// start serves a on a new local server, closed when the test ends.
func (s *server) start(t testing.TB, a api, tls bool) {
	s.api = a
	s.closing = make(chan struct{})
	s.faults = map[string][]Fault{}
	s.hooks = map[string][]func(){}
	if tls {
		s.srv = httptest.NewTLSServer(s)
	} else {
		s.srv = httptest.NewServer(s)
	}
	s.URL = s.srv.URL
	t.Cleanup(func() {
		close(s.closing) // lets hanging handlers return, or Close would wait for them
		s.srv.Close()
	})
}

// Fail makes the next len(faults) requests for call (for any call when call
// is "") answer with faults, in order, instead of the API's answer.
func (s *server) Fail(call string, faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[call] = append(s.faults[call], faults...)
}

// RetryAfter makes the throttling answers from now on that carry a
// Retry-After (Google's and Azure's, 1 s unless set) carry seconds
// instead, as written in the header: "0", "2", or a value a caller must
// not trust.
func (s *server) RetryAfter(seconds string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retryAfter = seconds
}

// After runs fn once, after the server has carried out the next call of that
// name and before the answer is sent: a change fn makes lands between the
// caller's call and its next one.
func (s *server) After(call string, fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks[call] = append(s.hooks[call], fn)
}

func (s *server) next(call string) (Fault, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var f Fault
	for _, k := range []string{call, ""} {
		if q := s.faults[k]; len(q) > 0 {
			f, s.faults[k] = q[0], q[1:]
			break
		}
	}
	var hook func()
	if f == 0 {
		if q := s.hooks[call]; len(q) > 0 {
			hook, s.hooks[call] = q[0], q[1:]
		}
	}
	return f, hook
}

// ServeHTTP logs the request, then answers it with a queued fault or the API.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	call := s.api.call(r, body)
	logged := Request{Method: r.Method, URL: r.URL.RequestURI(), Call: call, Body: readable(r, body)}
	fault, hook := s.next(call)
	var rep reply
	switch {
	case call == "":
		rep = reply{status: http.StatusNotFound, body: []byte("no such operation\n")}
	case fault == Hang:
		// Logged now: the caller may look at the log as soon as it gives up.
		s.add(logged)
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return
	case fault == Throttle:
		rep = s.api.throttled()
		s.mu.Lock()
		if s.retryAfter != "" && rep.header.Get("Retry-After") != "" {
			rep.header.Set("Retry-After", s.retryAfter)
		}
		s.mu.Unlock()
	default:
		rep = s.api.answer(call, r, body)
	}
	if hook != nil {
		hook()
	}
	logged.Status, logged.Answer = rep.status, string(rep.body)
	s.add(logged)
	for k, vs := range rep.header {
		w.Header()[k] = vs
	}
	w.WriteHeader(rep.status)
	_, _ = w.Write(rep.body)
}

// readable returns a form-encoded body a field a line, sorted, and any other
// body as it is.
func readable(r *http.Request, body []byte) string {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return string(body)
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return string(body)
	}
	var lines []string
	for k, vs := range form {
		for _, v := range vs {
			lines = append(lines, k+"="+v)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
