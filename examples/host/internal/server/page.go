package server

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/page"
)

// addPage serves the tenant page from mgr's cache, whose kinds in whole are
// cached whole, and from a cache of every RoleBinding's membership
// annotations that only a host with the page keeps (page.NewMembers).
// SubjectAccessReviews go to the API server through mgr's client (creates
// are never cached).
func addPage(mgr manager.Manager, cfg *hostconfig.Config, whole []schema.GroupVersionKind) error {
	pc := cfg.Page
	members, err := page.NewMembers(mgr)
	if err != nil {
		return err
	}
	h := page.New(mgr.GetClient(), mgr.GetScheme(), page.NewAccess(mgr.GetClient(), pc.TTL(), pc.AccessEntries), page.Options{
		UserIDHeader: pc.UserIDHeader, UserIDPrefix: pc.UserIDPrefix, GroupsHeader: pc.GroupsHeader,
		FrameAncestors: pc.FrameAncestors, Whole: whole, Members: members,
	})
	if err := mgr.Add(page.Server{Address: pc.Address, Handler: h}); err != nil {
		return fmt.Errorf("add the tenant page: %w", err)
	}
	return nil
}
