package budgets

import "time"

// WithRaiseFirst breaks the order of a move: receivers are raised before
// donors are lowered. Tests use it to show that they see the overspend this
// order allows.
func WithRaiseFirst() Option { return func(o *options) { o.raiseFirst = true } }

// WithTimings sets how long a lowering may take to be enforced and how
// often the balancer looks without a change.
func WithTimings(settle, tick time.Duration) Option {
	return func(o *options) { o.settle, o.tick = settle, tick }
}
