package opa

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrUndefined is returned by Client.Query when OPA answers without a result:
// the document or rule is undefined (no such path, or no rule body held).
// It is not an empty result.
var ErrUndefined = errors.New("opa: result is undefined")

// Client queries an OPA server's Data API (/v1/data/...).
type Client struct {
	base *url.URL
	http *http.Client
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithHTTPClient sets the HTTP client, for TLS settings or a proxy. The
// default is a client with a 10s timeout.
func WithHTTPClient(h *http.Client) ClientOption {
	return func(c *Client) { c.http = h }
}

// NewClient returns a client of the OPA server at baseURL, such as
// http://opa.gateway:8181.
func NewClient(baseURL string, opts ...ClientOption) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("opa url %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("opa url %q: want http(s)://host[:port]", baseURL)
	}
	c := &Client{base: u, http: &http.Client{Timeout: 10 * time.Second}}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Query evaluates the document or rule at path (slash- or dot-separated,
// such as "storage/grants" or "storage.grants") and returns OPA's result as
// JSON. With a non-nil input it POSTs {"input": input}; otherwise it GETs.
// An answer without a result returns ErrUndefined; a server error returns
// OPA's code and message.
func (c *Client) Query(ctx context.Context, path string, input any) (json.RawMessage, error) {
	p := strings.Trim(strings.ReplaceAll(path, ".", "/"), "/")
	if p == "" {
		return nil, fmt.Errorf("opa: empty query path")
	}
	u := c.base.JoinPath("v1", "data", p)
	method, body := http.MethodGet, io.Reader(nil)
	if input != nil {
		b, err := json.Marshal(map[string]any{"input": input})
		if err != nil {
			return nil, fmt.Errorf("opa: encode input: %w", err)
		}
		method, body = http.MethodPost, bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("opa %s %s: %w", method, u.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("opa %s %s: read response: %w", method, u.Path, err)
	}
	if len(data) > maxResponse {
		return nil, fmt.Errorf("opa %s %s: response larger than %d bytes", method, u.Path, maxResponse)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &e) == nil && e.Code != "" {
			return nil, fmt.Errorf("opa %s %s: %s: %s: %s", method, u.Path, resp.Status, e.Code, e.Message)
		}
		return nil, fmt.Errorf("opa %s %s: %s", method, u.Path, resp.Status)
	}
	return decodeResponse(data)
}

// maxResponse bounds what a query may return (grant documents are small).
const maxResponse = 32 << 20

// decodeResponse takes the result out of OPA's {"result": ...} envelope. A
// missing result is ErrUndefined; a result of null is returned as null.
func decodeResponse(data []byte) (json.RawMessage, error) {
	var env map[string]json.RawMessage
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("opa: malformed response: %w", err)
	}
	r, ok := env["result"]
	if !ok {
		return nil, ErrUndefined
	}
	return r, nil
}
