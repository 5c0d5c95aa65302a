package hostapp

// This file holds Run, the whole main of a binary built with hostapp.

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// DefaultGCPercent is the host's GOGC when the environment sets none (Run
// sets it; the benchmark runs its in-process host with it too). Go
// collects garbage once the heap has grown by GOGC percent since the last
// collection, and the host's heap is mostly its cache, which lives as long
// as the process: at Go's 100 the process holds about twice its cache. At 50
// the benchmark's host used 17-27% less RSS for a little more CPU while
// Profiles change (see "Memory" in examples/host/docs/deploying.md); an
// idle host allocates little and collects seldom either way.
const DefaultGCPercent = 50

// Run is a binary's whole main: it runs the process's command line with
// app as the process's own (App.OwnsProcess), under GOGC=50 unless the
// environment sets GOGC, until SIGINT or SIGTERM, and exits with Main's
// code.
func Run(app App) {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(DefaultGCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	app.OwnsProcess = true
	code := Main(ctx, app, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
