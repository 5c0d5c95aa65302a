package reconcilers

import "github.com/go-logr/logr"

// maxVerbosity is the highest logr verbosity a reconcile's logger passes on.
// The Kubernetes client logs whole request and response bodies at V(8) and
// above through the context's logger, and when a plugin reads or writes
// Secrets those bodies hold their values, which must never reach a log line,
// whatever --log-level says.
const maxVerbosity = 7

// withoutBodies returns l with every level above maxVerbosity turned off.
func withoutBodies(l logr.Logger) logr.Logger {
	sink := l.GetSink()
	if sink == nil {
		return l
	}
	// The wrapper adds a frame between the caller and the sink.
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1)
	}
	return l.WithSink(cappedSink{LogSink: sink})
}

// cappedSink is a LogSink that is disabled above maxVerbosity.
type cappedSink struct {
	logr.LogSink
}

// Enabled reports whether level is at most maxVerbosity and enabled below.
func (c cappedSink) Enabled(level int) bool {
	return level <= maxVerbosity && c.LogSink.Enabled(level)
}

// WithValues keeps the cap on the derived sink.
func (c cappedSink) WithValues(kv ...any) logr.LogSink {
	return cappedSink{LogSink: c.LogSink.WithValues(kv...)}
}

// WithName keeps the cap on the derived sink.
func (c cappedSink) WithName(name string) logr.LogSink {
	return cappedSink{LogSink: c.LogSink.WithName(name)}
}
