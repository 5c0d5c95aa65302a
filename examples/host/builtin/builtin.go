package builtin

import (
	"github.com/profilekit/profilekit/gitea"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apps"
	"github.com/profilekit/profilekit/plugins/authpolicy"
	"github.com/profilekit/profilekit/plugins/azureidentity"
	"github.com/profilekit/profilekit/plugins/blobcsi"
	"github.com/profilekit/profilekit/plugins/budgets"
	"github.com/profilekit/profilekit/plugins/contributors"
	"github.com/profilekit/profilekit/plugins/core"
	"github.com/profilekit/profilekit/plugins/egress"
	"github.com/profilekit/profilekit/plugins/expose"
	"github.com/profilekit/profilekit/plugins/irsa"
	"github.com/profilekit/profilekit/plugins/limitrange"
	"github.com/profilekit/profilekit/plugins/namespacemeta"
	"github.com/profilekit/profilekit/plugins/network"
	"github.com/profilekit/profilekit/plugins/notebook"
	"github.com/profilekit/profilekit/plugins/quotas"
	"github.com/profilekit/profilekit/plugins/rbac"
	"github.com/profilekit/profilekit/plugins/replicate"
	"github.com/profilekit/profilekit/plugins/templates"
	"github.com/profilekit/profilekit/plugins/volumes"
	"github.com/profilekit/profilekit/plugins/workloadidentity"
)

// Definitions returns every plugin profilekit ships, in one place: a plugin
// not listed in a binary cannot be enabled by configuration, and one listed
// does nothing until its section in the configuration file enables it.
func Definitions() []plugins.Definition {
	return []plugins.Definition{
		apps.Definition(),
		authpolicy.Definition(),
		// blobcsi polls its grants sources beside its controller and
		// reconciles only the Profiles whose grants change.
		blobcsi.Definition(),
		// budgets runs its balancer beside its controller: the only
		// writer of the members' quotas; enable it on one host of a
		// sharded set (it reads every Profile).
		budgets.Definition(),
		// core replaces the upstream profile controller; it reads
		// USERID_HEADER, USERID_PREFIX and the *_PRINCIPAL variables as its
		// defaults, under the configuration file's.
		core.Definition(),
		contributors.Definition(),
		// The cloud identity plugins call AWS IAM, Google IAM and Azure with
		// the platform's default credential chains, set up on first use.
		azureidentity.Definition(azureidentity.DefaultCredentials()),
		egress.Definition(),
		// expose reads ISTIO_GATEWAY, ISTIO_HOSTS and CLUSTER_DOMAIN as its
		// defaults, under the configuration file's.
		expose.Definition(),
		irsa.Definition(irsa.DefaultIAM()),
		gitea.Definition(),
		limitrange.Definition(),
		namespacemeta.Definition(),
		network.Definition(),
		notebook.Definition(),
		quotas.Definition(),
		rbac.Definition(),
		replicate.Definition(),
		// templates owns the kinds its configuration's templates name
		// (Definition.OwnsFrom); the host watches those it finds served.
		templates.Definition(),
		// volumes also runs a sweeper of released volumes when its
		// defaults set retainFor.
		volumes.Definition(),
		workloadidentity.Definition(workloadidentity.DefaultIAM()),
	}
}
