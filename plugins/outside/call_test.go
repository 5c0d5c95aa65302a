package outside_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/profilekit/profilekit/plugins/outside"
)

// A host that sets no timeout gets DefaultTimeout for every call, not a
// context that is over before the call begins.
func TestOutsideCallDefaultTimeout(t *testing.T) {
	for _, timeout := range []time.Duration{0, -time.Second} {
		o := outside.New(outsideClient(t), "blob", newProfile(nil), outside.Options{Timeout: timeout})
		var left time.Duration
		var ctxErr error
		err := o.Call(t.Context(), "AzureBlob", func(ctx context.Context) error {
			deadline, ok := ctx.Deadline()
			if !ok {
				return errors.New("no deadline")
			}
			left, ctxErr = time.Until(deadline), ctx.Err()
			return nil
		})
		if err != nil || ctxErr != nil || left <= outside.DefaultTimeout-time.Second || left > outside.DefaultTimeout {
			t.Errorf("Options.Timeout %v: call error %v, its context %v with %v left; want about %v", timeout, err, ctxErr, left, outside.DefaultTimeout)
		}
	}
}

// A call that runs out of time says so; one that failed does not.
func TestOutsideCallErrorSaysWhatHappened(t *testing.T) {
	o := outside.New(outsideClient(t), "blob", newProfile(nil), outside.Options{Timeout: 20 * time.Millisecond})
	err := o.Call(t.Context(), "AzureBlob", func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if want := "AzureBlob: no answer within 20ms: " + context.DeadlineExceeded.Error(); err == nil || err.Error() != want {
		t.Errorf("slow call: %v, want %q", err, want)
	}
	err = o.Call(t.Context(), "AzureBlob", func(context.Context) error { return errors.New("403 Forbidden") })
	if want := "AzureBlob: 403 Forbidden"; err == nil || err.Error() != want {
		t.Errorf("failed call: %v, want %q", err, want)
	}
}

// A CallGate stands before every call (refusing it: the call is not made)
// and after (losing its answer: the piece is not recorded as made).
func TestOutsideCallGate(t *testing.T) {
	ctx := t.Context()
	c := outsideClient(t)
	p := newProfile(nil)
	refused, lost := errors.New("refused"), errors.New("answer lost")
	var seen []string
	gate := outside.CallGate{
		Before: func(system string) error {
			seen = append(seen, "before "+system)
			if system == "Refused" {
				return refused
			}
			return nil
		},
		After: func(system string, err error) error {
			seen = append(seen, "after "+system)
			if system == "Lost" && err == nil {
				return lost
			}
			return err
		},
	}
	made := calls{}
	o := outside.New(c, "iam", p, outside.Options{}, outside.WithCallGate(gate))
	_, err := o.Ensure(ctx, "Refused", "role/a", 1, made.fn("role/a", nil))
	var oe *outside.Error
	if !errors.Is(err, refused) || !errors.As(err, &oe) || oe.System != "Refused" || made["role/a"] != 0 {
		t.Errorf("a refused call: %v with %d calls; want a Refused outside.Error and no call", err, made["role/a"])
	}
	_, err = o.Ensure(ctx, "Lost", "role/b", 1, made.fn("role/b", nil))
	if !errors.Is(err, lost) || made["role/b"] != 1 {
		t.Errorf("a call whose answer was lost: %v with %d calls; want the loss, one call", err, made["role/b"])
	}
	if _, err := o.Ensure(ctx, "Open", "role/c", 1, made.fn("role/c", nil)); err != nil {
		t.Errorf("a call the gate lets through: %v", err)
	}
	if err := o.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if keys, err := outside.New(c, "iam", p, outside.Options{}).Recorded(ctx); err != nil || strings.Join(keys, ",") != "role/c" {
		t.Errorf("Recorded = %v, %v; want only role/c, the call that went through", keys, err)
	}
	want := "before Refused,before Lost,after Lost,before Open,after Open"
	if got := strings.Join(seen, ","); got != want {
		t.Errorf("the gate saw %s, want %s", got, want)
	}
}
