// Package logs builds the host's logger from its --log-level and
// --log-format flags, for the profilekit binary and the benchmark alike.
package logs

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	uzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// New returns a zap logger writing to w. level is error, info, debug, or a
// number n that shows logr levels up to V(n) (debug is 1); format is json
// (for log collectors) or console (for people).
func New(level, format string, w io.Writer) (logr.Logger, error) {
	var lvl zapcore.Level
	switch strings.ToLower(level) {
	case "error":
		lvl = zapcore.ErrorLevel
	case "info":
		lvl = zapcore.InfoLevel
	case "debug":
		lvl = zapcore.DebugLevel
	default:
		n, err := strconv.Atoi(level)
		if err != nil || n < 0 {
			return logr.Logger{}, fmt.Errorf("--log-level: want error, info, debug or a non-negative number, got %q", level)
		}
		// logr's V(n) is zap's level -n.
		lvl = zapcore.Level(-n)
	}
	// Stack traces are for bugs, not for the expected errors a controller
	// reports (an invalid label is logged at error level).
	opts := []zap.Opts{
		zap.WriteTo(w), zap.Level(lvl), zap.StacktraceLevel(zapcore.DPanicLevel),
		zap.RawZapOpts(uzap.WrapCore(func(c zapcore.Core) zapcore.Core { return lazyFields{c} })),
	}
	switch format {
	case "json":
		opts = append(opts, zap.JSONEncoder(isoTime))
	case "console":
		opts = append(opts, zap.ConsoleEncoder(isoTime))
	default:
		return logr.Logger{}, fmt.Errorf("--log-format: want json or console, got %q", format)
	}
	return zap.New(opts...), nil
}

// lazyFields is a zap core that encodes the values given to a logger
// (logr's WithValues) only when a line is written with them. The
// controllers give every reconcile a logger with its Profile's name and a
// reconcile ID, and at the error level almost none of those loggers ever
// writes: encoding their values at once took a few percent of a busy
// host's CPU.
type lazyFields struct{ zapcore.Core }

// With returns a core that adds fields when it first writes.
func (c lazyFields) With(fields []zapcore.Field) zapcore.Core {
	return lazyFields{zapcore.NewLazyWith(c.Core, fields)}
}

// isoTime writes timestamps people and log collectors both read.
func isoTime(c *zapcore.EncoderConfig) { c.EncodeTime = zapcore.ISO8601TimeEncoder }

// CheckRate checks the client rate flags: both positive, and a burst that
// was set no lower than the rate, which the client could never reach.
func CheckRate(qps float32, burst int, burstSet bool) error {
	switch {
	case qps <= 0:
		return fmt.Errorf("--kube-api-qps must be positive, got %g", qps)
	case burst <= 0:
		return fmt.Errorf("--kube-api-burst must be positive, got %d", burst)
	case burstSet && float32(burst) < qps:
		return fmt.Errorf("--kube-api-burst %d is below the rate %g; the client could never reach it", burst, qps)
	}
	return nil
}
