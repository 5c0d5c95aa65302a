package testhost

import (
	"strings"
	"testing"
)

// ConfigCase is one case of a plugin config's Validate: Edit changes a
// config holding the defaults, and Want is a part of the error Validate
// must then return, or "" for none.
type ConfigCase[C any] struct {
	Name string
	Edit func(C)
	Want string
}

// CheckValidate runs each case as a subtest on a config fresh from
// defaults.
func CheckValidate[C interface{ Validate() error }](t *testing.T, defaults func() C, cases []ConfigCase[C]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			cfg := defaults()
			c.Edit(cfg)
			err := cfg.Validate()
			switch {
			case c.Want == "" && err != nil:
				t.Errorf("Validate: %v, want no error", err)
			case c.Want != "" && (err == nil || !strings.Contains(err.Error(), c.Want)):
				t.Errorf("Validate: %v, want an error with %q", err, c.Want)
			}
		})
	}
}
