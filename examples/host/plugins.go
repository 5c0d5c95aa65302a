package main

import (
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/plugins/rbac"
)

// definitions lists the plugins this binary is built with, in one place: a
// plugin not listed here cannot be enabled by configuration, and one listed
// here does nothing until its section in the configuration file enables it.
func definitions() []plugins.Definition {
	return []plugins.Definition{
		limitrange.Definition(),
		quotas.Definition(),
		rbac.Definition(),
	}
}
