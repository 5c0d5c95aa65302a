package main

import (
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/authpolicy"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/plugins/egress"
	"github.com/profilekit/profilekit/plugins/expose"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/network"
	"github.com/profilekit/profilekit/plugins/notebook"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/plugins/rbac"
	"github.com/profilekit/profilekit/plugins/volumes"
)

// definitions lists the plugins this binary is built with, in one place: a
// plugin not listed here cannot be enabled by configuration, and one listed
// here does nothing until its section in the configuration file enables it.
func definitions() []plugins.Definition {
	return []plugins.Definition{
		authpolicy.Definition(),
		// core replaces the upstream profile controller; it reads
		// USERID_HEADER, USERID_PREFIX and the *_PRINCIPAL variables as its
		// defaults, under the configuration file's.
		core.Definition(),
		egress.Definition(),
		// expose reads ISTIO_GATEWAY, ISTIO_HOSTS and CLUSTER_DOMAIN as its
		// defaults, under the configuration file's.
		expose.Definition(),
		limitrange.Definition(),
		network.Definition(),
		notebook.Definition(),
		quotas.Definition(),
		rbac.Definition(),
		// volumes also runs a sweeper of released volumes when its
		// defaults set retainFor.
		volumes.Definition(),
	}
}
