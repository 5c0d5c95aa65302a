package diff

import (
	"errors"
	"fmt"
	"testing"

	"github.com/profilekit/profilekit/plugins/outside"
)

func TestOnlyRefused(t *testing.T) {
	refused := &outside.Error{System: "AzureBlob", Err: errRefused}
	other := errors.New("apply ResourceQuota: forbidden")
	for _, tc := range []struct {
		reason string
		err    error
		want   bool
	}{
		{"a refused call, as the Outside reports it", refused, true},
		{"a refused call, wrapped by the plugin", fmt.Errorf("container unclassified: %w", refused), true},
		{"independent steps that all stopped at refused calls", errors.Join(refused, fmt.Errorf("grant: %w", refused)), true},
		{"a refused call joined with a real failure", errors.Join(refused, other), false},
		{"a real failure", other, false},
		{"no error", nil, false},
	} {
		if got := onlyRefused(tc.err); got != tc.want {
			t.Errorf("%s: onlyRefused(%v) = %v, want %v", tc.reason, tc.err, got, tc.want)
		}
	}
}
