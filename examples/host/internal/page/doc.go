// Package page is the tenant page that `profilekit run` serves when the
// host configuration says page: {enabled: true}: a read-only view, for one
// namespace, of each plugin's condition in plain words (and, when False,
// who can fix it), quota use against its limits, the namespace's share of
// a team budget with its use and headroom, the LimitRange defaults a
// container gets, the owner and contributors and where each came from, the
// cloud identity of each ServiceAccount and whether it is in effect, the
// volumes and their phase, the Argo CD apps and their health, the
// PodDefaults a notebook can pick, and links to the dashboard's Manage
// Contributors and Volumes pages.
//
// # Where it reads
//
// Everything shown comes from the host manager's cache, which holds
// Profiles whole and only the objects profilekit labels, and from one
// cache of the page's own (NewMembers). Quotas, LimitRanges,
// PersistentVolumeClaims and PodDefaults are read whole (WholeKinds: a
// host that serves the page caches these kinds whole for its plugins too,
// so each is cached once); ServiceAccounts in the form the host caches
// them (the identity annotations are metadata). RoleBindings come from the
// page's own cache of every RoleBinding in the cluster, each reduced to
// its name, namespace, KFAM's user and role annotations and profilekit's
// managed-by and plugin labels: the contributors added in the dashboard's
// Manage Contributors are KFAM's bindings, which carry no profilekit
// label. Only a host that serves the page keeps that cache.
//
// A member's source is the binding's: the owner's (the core plugin's, or
// the upstream controller's namespaceAdmin), the Profile's contributors
// (the contributors plugin's), or the dashboard (a binding without
// profilekit's labels). As in the dashboard, what KFAM's annotations say
// is what is listed.
//
// A namespace the budgets plugin serves shows its share of each team
// budget: the ResourceQuota that the plugin's balancer keeps there
// (labelled with the budget's name and owned by the Profile), its
// spec.hard as the share, status.used as the use, and the headroom left;
// and the plugin's condition while it waits or fails. That quota is not
// listed again with the namespace's own quota.
//
// A cloud identity is in effect when the plugin that grants it (irsa,
// workloadidentity, azureidentity) holds its annotation on the
// ServiceAccount (the cache keeps profilekit's managed-fields entries) and
// reports Ready. Under a plugin that is not ready the page says why; an
// annotation someone in the namespace wrote by hand is said to be no grant
// at all, since anyone who may edit the namespace's ServiceAccounts may
// write one.
//
// When the host runs the apps plugin, the apps section lists the
// Applications that plugin keeps for the Profile in the Argo CD namespace
// (by profilekit's labels, and deploying into the namespace), from the
// cache the plugin fills, with Argo CD's sync and health status and, for
// an app that is not healthy, Argo CD's message.
//
// # Requests to the API server per view
//
// One SubjectAccessReview for each namespace the view shows or offers in
// its picker whose answer for the user is not in the access cache (30 s by
// default); nothing else. A view that repeats within the cache's time
// sends none. A view that the cache and the API server cannot answer
// within Options.Timeout (10 s by default; say, a kind the host may not
// list, whose cache never fills) answers 503 and shows nothing.
//
// # Who sees what
//
// The user is the user-id header's value with the host's prefix stripped,
// and the groups header's values when one is configured: the headers the
// Kubeflow gateway sets. They are trusted only because the page is
// reachable through the gateway alone: an Istio AuthorizationPolicy that
// admits only the ingress gateway, which examples/deploy ships (the
// chart's page.enabled, the component components/page). A namespace is
// shown only when a SubjectAccessReview says the user, with those groups,
// may list pods in it, as Kubeflow's own web apps ask; kubeflow-view,
// -edit and -admin all allow it. A namespace the user may not see answers
// exactly as one that does not exist: 404, the same body.
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
//
// # The admin overview
//
// /overview (Overview, routed beside the tenant page by NewMux) is for
// platform administrators: every Profile in the cache with its Ready
// condition, the failing ones first, then those not ready yet, each with
// what fails or waits in plain words; counts by plugin; filter and search
// by query parameters (q, state, plugin, selector, page), through a form
// the browser submits, so that the overview runs no script at all
// (default-src 'none'); where the staged rollout stands (the leader's
// ConfigMap profilekit-rollout, which Overview.Start reads by name every
// 10 s, since the host may get that ConfigMap but not list ConfigMaps,
// counted over the cached Profiles as the leader counts them); each team budget's shares, use, free headroom and
// blocked members (the budgets plugin's quotas and conditions); the
// outside systems' calls and error rates, since the replica started and
// over the last minutes, from the host's own metrics registry
// (profilekit_outside_calls_total: only the leader calls out, and a
// replica on standby says so); and a link to the Grafana dashboard
// when one is configured. A view reads only the cache, the metrics and
// what Start keeps; its one request to the API server is a
// SubjectAccessReview of whether the user,
// with their groups, may get overview.profilekit.dev cluster-wide, which
// the ClusterRole profilekit-overview grants (kept in the access cache).
// Anyone else gets 403 and no data.
package page
