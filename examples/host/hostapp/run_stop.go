package hostapp

// This file holds what keeps a graceful stop of run quiet.

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// errLeaderElectionLost is the message of the error controller-runtime's
// manager reports whenever its leader election ends, also when it ends
// because the manager stops and releases the Lease
// (LeaderElectionReleaseOnCancel): it then arrives while the manager stops,
// and is logged at error level as "error received after stop sequence was
// engaged", on most stops.
const errLeaderElectionLost = "leader election lost"

// quietStop returns logger, except that once ctx is done (SIGTERM, SIGINT,
// the caller's cancel) the errors that the stop itself causes are logged at
// info level: the end of the leader election, requests and waits cut short
// by the stop (context canceled, an informer that did not sync before the
// stop). They are how a graceful stop ends, and an error line for them
// pages whoever alerts on error logs. Any other error stays an error, and
// a leader election lost while ctx runs is still an error, which the
// manager returns and run reports.
func quietStop(ctx context.Context, logger logr.Logger) logr.Logger {
	return logr.New(stopSink{LogSink: logger.GetSink(), ctx: ctx})
}

// stopSink is a logr.LogSink that demotes the errors a stop causes, once
// ctx is done, to info lines.
type stopSink struct {
	logr.LogSink
	ctx context.Context
}

var _ logr.CallDepthLogSink = stopSink{}

// Error logs err, or, for an error the stop caused, an info line that says
// so.
func (s stopSink) Error(err error, msg string, keysAndValues ...any) {
	if s.ctx.Err() == nil || !causedByStop(err) {
		s.LogSink.Error(err, msg, keysAndValues...)
		return
	}
	if !s.LogSink.Enabled(0) {
		return
	}
	if err.Error() == errLeaderElectionLost {
		s.LogSink.Info(0, "leader election ended with the stop; the Lease was released", keysAndValues...)
		return
	}
	s.LogSink.Info(0, msg+" (cut short by the stop)", append(keysAndValues, "reason", err.Error())...)
}

// causedByStop reports whether err is one that a stop causes.
func causedByStop(err error) bool {
	return err != nil && (err.Error() == errLeaderElectionLost || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err))
}

// WithValues keeps the sink's stop handling.
func (s stopSink) WithValues(keysAndValues ...any) logr.LogSink {
	return stopSink{LogSink: s.LogSink.WithValues(keysAndValues...), ctx: s.ctx}
}

// WithName keeps the sink's stop handling.
func (s stopSink) WithName(name string) logr.LogSink {
	return stopSink{LogSink: s.LogSink.WithName(name), ctx: s.ctx}
}

// WithCallDepth passes the depth on, so that lines name their caller.
func (s stopSink) WithCallDepth(depth int) logr.LogSink {
	if d, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return stopSink{LogSink: d.WithCallDepth(depth), ctx: s.ctx}
	}
	return s
}
