// Package workloadidentity lets a Profile's workloads on GKE act as a Google
// service account through workload identity, and accepts the upstream
// controller's plugin entry unchanged:
//
//	spec:
//	  plugins:
//	  - kind: WorkloadIdentity
//	    spec:
//	      gcpServiceAccount: team-a@my-project.iam.gserviceaccount.com
//
// The plugin puts the annotation iam.gke.io/gcp-service-account on the
// Profile's workload service accounts (default-editor unless the host lists
// others), which the core plugin or the upstream controller makes: it never
// creates, updates or deletes one, and owns its single annotation key through
// server-side apply under its field manager (profilekit-WorkloadIdentity), so
// that other annotations stay. While a service account does not exist yet,
// the condition says so and the plugin tries again.
//
// It grants roles/iam.workloadIdentityUser to
// serviceAccount:<pool>[<namespace>/<name>] on the Google service account,
// reading the IAM policy and writing it back with the etag it was read with;
// a write that lost to a concurrent change is redone on a fresh read. The
// pool is <project of the Google service account>.svc.id.goog unless the host
// sets workloadPool (a cluster in another project). Other bindings,
// conditional bindings and audit configs are kept. Google IAM is called only
// when what the plugin wants changed since it last made it true (or on the
// host's re-verify period, or the Profile's profilekit.dev/reverify
// annotation), so a resync makes no call.
//
// The annotation waits for the grant: a pod given a Google service account
// it may not act as would fail. A value that is not a Google service
// account email (a short one included) is an InvalidSpec condition naming
// it; nothing is called and nothing panics.
//
// # What is ours in an IAM policy
//
// A Google service account's IAM policy is shared with other tenants and
// other software, and a binding has no room for a label or a comment, so the
// proof of what the plugin added lives in its outside-state record, a
// ConfigMap labelled as the plugin's in the Profile's namespace: one key per
// member it added (grant/<gsa>/<member>), and one per member that already
// held the role, in a binding without a condition, before its first grant
// (foreign/<gsa>/<member>). Members are serviceAccount:<pool>[<namespace>/<name>];
// brackets and slashes cannot occur in names, so no two service accounts
// share one. Revoke removes only members recorded as added, of this
// Profile's namespace, from bindings without a condition, and drops a
// binding left empty; a member recorded as foreign is never removed (for a
// Profile being deleted it is reported as dangling trust, which holds the
// next Profile of the name until an administrator clears it), and a
// conditional binding is never changed. A Profile being deleted also loses
// its members of the account its spec names that no record holds. When a foreign member no longer holds
// the role (its owner revoked it), the next verification forgets it and the
// plugin grants it as its own. A grant is recorded after the policy read
// shows the member is not there and before the policy is written, and the
// policy is not written while the record cannot be: a grant made by a pass
// that stops before the end (the host stops, the record's final write
// fails) is still the plugin's to revoke, not a member that looks foreign.
// The one case left to judgment: a grant recorded and not made (the
// policy write failed), when someone grants the same member before the
// next pass; the plugin then takes that member as its own and revokes it
// with the Profile, rather than leave a tenant's service account holding
// an account that nothing records.
//
// Versions before these keys recorded gsa/<gsa> and removed every member of
// the Profile on Revoke; such a record is honoured once (the Profile's
// members on that account count as added) and replaced by the keys above.
// A Google service account the Profile stops naming loses the members we
// added. While IAM fails, the finalizer keeps a deleted Profile and the
// plugin tries again.
//
// The upstream controller's -workload-identity flag gives every Profile one
// Google service account; the host does the same with a default and
// enabled: all:
//
//	WorkloadIdentity:
//	  enabled: all
//	  defaults:
//	    gcpServiceAccount: kubeflow-user@my-project.iam.gserviceaccount.com
//	    serviceAccounts: [default-editor]
//	    workloadPool: my-project.svc.id.goog
//	    allowedIdentities:
//	    - identity: kubeflow-user@my-project.iam.gserviceaccount.com
//	      shared: true
//
// An account is the platform's to hand out: a Profile may act only as an
// account an allowance of allowedIdentities gives it ("{{ .Namespace
// }}@my-project.iam.gserviceaccount.com" gives each Profile its own;
// IdentityNotAllowed otherwise, and for every account while the list is
// empty), checked before anything is written; an account on which another
// Profile's record holds a grant is a Conflict naming that Profile unless
// its allowance is shared. When a Profile goes, stops listing the plugin or
// is no longer allowed the account, its members go from the account it
// names and from every account the allowances name for it, record or not.
//
// The host calls IAM with application default credentials (on GKE, its own
// workload identity); it needs iam.serviceAccounts.getIamPolicy and
// setIamPolicy on the Google service accounts Profiles name.
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind] and the
// spec field upstream's plugin takes (gcpServiceAccount), [Definition],
// [NewIAM] and [DefaultIAM], [Config] and [NewConfig] with the JSON names,
// defaults and meaning of their fields, the annotation [AnnotationGSA], the
// role it grants ([RoleWorkloadIdentityUser]), the system name GCPIAM
// ([System]), and the condition WorkloadIdentityReady. The [IAM] interface is
// stable for callers; implementations outside this module (test doubles) may
// need a new method in a minor release. Experimental, and free to change in a
// minor release: [Project] and the policy helpers ([Member], [Resource],
// [HasMembers], [Grant], [Revoke], [ErrConcurrentChange], [ErrNoAccount]), [Plugin] and
// [DefaultServiceAccount]; run the plugin through its [Definition], and use
// these for tests and previews.
package workloadidentity
