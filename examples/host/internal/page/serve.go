package page

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Server runs a Handler on an address until its context ends; it is a
// controller-runtime Runnable that serves on every replica, leader or not,
// since it only reads.
type Server struct {
	// Address is where the page listens, such as :8082.
	Address string
	// Handler is the page.
	Handler http.Handler
}

// Start serves until ctx ends, then shuts down within five seconds.
func (s Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.Address)
	if err != nil {
		return fmt.Errorf("tenant page: %w", err)
	}
	srv := &http.Server{Handler: s.Handler, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("tenant page: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("tenant page: %w", err)
	}
	return nil
}

// NeedLeaderElection is false: every replica serves the page.
func (Server) NeedLeaderElection() bool { return false }
