// Package page is the tenant page that `profilekit run` serves when the
// host configuration says page: {enabled: true}: a read-only view, for one
// namespace, of each plugin's condition in plain words (and, when False,
// who can fix it), quota use against its limits, the LimitRange defaults a
// container gets, the owner and contributors, the cloud identity of each
// ServiceAccount, the volumes and their phase, and the PodDefaults a
// notebook can pick.
//
// # Where it reads
//
// Everything shown comes from the host manager's cache, which holds
// Profiles whole and only the objects profilekit labels. Quotas,
// LimitRanges, PersistentVolumeClaims and PodDefaults are read whole
// (WholeKinds: a host that serves the page caches these kinds whole for its
// plugins too, so each is cached once); RoleBindings and ServiceAccounts
// in the form the host caches them (KFAM's user and role annotations and
// the identity annotations are metadata). Objects made by hand or by KFAM
// carry no profilekit label and are not shown.
//
// # Requests to the API server per view
//
// One SubjectAccessReview for each namespace the view shows or offers in
// its picker whose answer for the user is not in the access cache (30 s by
// default); nothing else. A view that repeats within the cache's time
// sends none.
//
// # Who sees what
//
// The user is the user-id header's value with the host's prefix stripped,
// and the groups header's values when one is configured: the headers the
// Kubeflow gateway sets. They are trusted only because the page is
// reachable through the gateway alone: an Istio AuthorizationPolicy that
// admits only the ingress gateway (see the host README). A namespace is shown only when a
// SubjectAccessReview says the user, with those groups, may list pods in
// it, as Kubeflow's own web apps ask; kubeflow-view, -edit and -admin all
// allow it. A namespace the user may not see answers exactly as one that
// does not exist: 404, the same body.
//
// Everything a tenant can write (labels, condition messages, contributor
// names, annotations) is rendered by html/template, which escapes it. The
// page runs no inline script: its Content-Security-Policy allows scripts
// and styles from its own origin only, and frames only by the origins
// the configuration names ('self' by default, the dashboard behind the
// same gateway).
//
// # In the dashboard
//
// The page loads the dashboard's /dashboard_lib.bundle.js, as Kubeflow's
// apps do, and its own static/page.js, which follows the dashboard's
// namespace selector (CentralDashboardEventHandler's onNamespaceSelected).
// Opened on its own, the library is missing and the page shows a picker of
// the namespaces the user may see.
package page
