package opa

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Poller is a Source that asks an OPA server for a grants document at a fixed
// interval.
type Poller struct {
	tracker
	client   *Client
	path     string
	input    any
	interval time.Duration
}

var _ Source = (*Poller)(nil)

// NewPoller returns a Poller named name that queries path (such as
// "storage/grants") on c, with input when it is not nil.
func NewPoller(name string, c *Client, path string, input any, opts Options) (*Poller, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("grants source %s: %w", name, err)
	}
	if c == nil || path == "" {
		return nil, fmt.Errorf("grants source %s: needs a client and a path", name)
	}
	return &Poller{tracker: newTracker(name, o), client: c, path: path, input: input, interval: o.Interval}, nil
}

// Interval returns how often the Poller asks.
func (p *Poller) Interval() time.Duration { return p.interval }

// Poll asks once and takes the answer under the source rules. It returns
// the namespaces to notify.
func (p *Poller) Poll(ctx context.Context) []string {
	// The client's own timeout bounds the query, not the interval: a
	// short interval on a busy server must not turn slow answers into
	// outages.
	raw, err := p.client.Query(ctx, p.path, p.input)
	if err != nil {
		reason := ReasonUnreachable
		if errors.Is(err, ErrUndefined) {
			reason = ReasonUndefined
		}
		return p.offer(ctx, Grants{}, &RefreshError{Source: p.name, Reason: reason, Err: err})
	}
	g, err := decodeResult(raw)
	if err != nil {
		return p.offer(ctx, Grants{}, &RefreshError{Source: p.name, Reason: ReasonMalformed, Err: err})
	}
	return p.offer(ctx, g, nil)
}

func decodeResult(raw json.RawMessage) (Grants, error) {
	// OPA serves a document pushed as a string as a JSON string; a gateway
	// that stores its grants that way still publishes a grants document.
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return Decode([]byte(s))
	}
	return Decode(raw)
}

// Run polls at once and then every interval until ctx ends.
func (p *Poller) Run(ctx context.Context, notify func([]string)) error {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		if ns := p.Poll(ctx); len(ns) > 0 {
			notify(ns)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
