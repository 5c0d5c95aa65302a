package welcome

import (
	"errors"
	"fmt"
	"strings"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/placeholders"
)

// Kind is the plugin's name in a Profile's spec.plugins.
const Kind = "welcome"

// Built-in defaults.
const (
	DefaultName      = "welcome"
	DefaultMessage   = "Welcome to {{ .Namespace }}, {{ .Owner }}!"
	DefaultMaxLength = 1024
)

// Config is the welcome plugin's configuration. A Profile may set Message
// and Contact; Name and MaxLength are the host's alone.
type Config struct {
	// Name of the ConfigMap. Default welcome.
	Name string `json:"name,omitempty" profilekit:"hostonly"`
	// MaxLength bounds the message, in bytes, after the placeholders are
	// filled in. Default 1024.
	MaxLength int `json:"maxLength,omitempty" profilekit:"hostonly"`
	// Message is the welcome text; it may hold {{ .Namespace }},
	// {{ .Profile }} and {{ .Owner }}.
	Message string `json:"message,omitempty"`
	// Contact says whom the namespace's users ask for help. Optional.
	Contact string `json:"contact,omitempty"`
}

// NewConfig returns a Config holding the built-in defaults.
func NewConfig() *Config {
	return &Config{Name: DefaultName, Message: DefaultMessage, MaxLength: DefaultMaxLength}
}

// Validate checks the name, the bound and the message's placeholders. The
// message's length is checked when it is built, since the placeholders'
// values are the Profile's.
func (c *Config) Validate() error {
	errs := []error{plugins.CheckObjectName(c.Name)}
	if c.MaxLength <= 0 {
		errs = append(errs, fmt.Errorf("maxLength %d: want a positive number of bytes", c.MaxLength))
	}
	if strings.TrimSpace(c.Message) == "" {
		errs = append(errs, errors.New("message is empty"))
	} else if err := placeholders.Check(c.Message, placeholders.Namespace, placeholders.Profile, placeholders.Owner); err != nil {
		errs = append(errs, fmt.Errorf("message %w", err))
	}
	return errors.Join(errs...)
}
