// Package irsa lets a Profile's workloads on EKS act as an IAM role through
// IAM roles for service accounts, and accepts the upstream controller's
// plugin entry unchanged:
//
//	spec:
//	  plugins:
//	  - kind: AwsIamForServiceAccount
//	    spec:
//	      awsIamRole: arn:aws:iam::111122223333:role/team-a
//	      annotateOnly: false
//
// The plugin puts the annotation eks.amazonaws.com/role-arn on the Profile's
// workload service accounts (default-editor unless the host lists others).
// Those service accounts are made by the core plugin or the upstream
// controller: the plugin never creates, updates or deletes one, and owns its
// single annotation key through server-side apply under its field manager
// (profilekit-AwsIamForServiceAccount), so that other annotations stay. While
// a service account does not exist yet, the condition says so and the plugin
// tries again; it is woken when the service account appears.
//
// Unless annotateOnly, it first makes the role trust
// system:serviceaccount:<namespace>:<name> through the cluster's OIDC
// provider (from the host configuration, or the provider of the policy's
// first web identity statement), and annotates the service accounts only
// once the trust policy holds them: a pod given a role that does not trust
// it would fail. A role the Profile named before keeps our subjects until
// the annotation points at the new one.
//
// # What is ours in a trust policy
//
// A role's trust policy is shared with other tenants, other Profiles and
// other software, so the plugin proves in the policy itself which statement
// it wrote: the Profile's subjects live in one statement of their own whose
// Sid is trustpolicy.StatementID, profilekit<8 hex digits of the provider's
// SHA-256>N<namespace spelt in letters and digits>, which no two Profiles
// (nor two clusters sharing the role) can share. The plugin adds to, rewrites
// and removes only that statement. Every other statement is kept byte for
// byte, and the policy is written without JSON's HTML escaping (an escaped &
// would count six characters against the size limit). A subject that a
// statement someone else wrote already trusts is not added again, and that
// statement is never changed: Revoke leaves it, and its owner decides; when
// the Profile is deleted it is reported as dangling trust, and the next
// Profile of the name gets no role until an administrator removes it and
// deletes the record (plugins.Outside.ReportDangling). Revoke drops the
// Profile's statement, from the roles the record holds and, for a Profile
// being deleted, from the role its spec names, record or not; when it is the policy's only one, it
// stays with an empty subject list, which matches no one, because IAM takes
// no policy without statements. IAM replaces the whole document and takes
// no precondition, so the plugin reads, edits and writes one role's policy
// one pass at a time within its process; a writer outside the host can
// still race it, and a statement it drops comes back at the next check
// (the re-verify period, or the profilekit.dev/reverify annotation). A role
// is written to the Profile's outside-state record before its policy is
// edited, and the policy is not edited while the record cannot be written:
// a statement made by a pass that stopped before the end is still removed
// once the Profile stops naming the role (a read of the policy, and no
// write when the statement is not there).
//
// Versions before Sids put subjects into the provider's first plain
// statement, unmarked, often one shared by several Profiles. Such a
// statement is someone else's to this version: kept as it is, its subjects
// not added again, and not cleaned up on Revoke. With the host option
// adoptStatements: true, the plugin claims (adds its Sid to) a statement
// without a Sid that has exactly the form it writes (Allow, the provider as
// the only principal, sts:AssumeRoleWithWebIdentity, StringEquals on the
// audience and on subjects that are all this Profile's) and from then on
// treats it as its own; a statement naming anyone else's subject is never
// claimed. Remove a deleted Profile's subject from a shared unmarked
// statement by hand.
//
// A policy that would pass the size limit (IAM's default is 2,048
// characters; a Profile's own statement takes about 400) is a
// TrustPolicyTooLarge condition that says by how much; the host may then
// raise maxPolicySize after raising the account's quota, give Profiles roles
// of their own, or choose subjects: wildcard, which trusts the configured
// service account names in every namespace with one StringLike pattern in
// one statement all Profiles share (Sid trustpolicy.WildcardStatementID).
// That form lets any namespace's default-editor assume the role, so it suits
// roles meant for all Profiles only; Revoke then leaves the pattern in place.
//
// IAM is called only when what the plugin wants changed since it last made
// it true (or when the host's re-verify period or the Profile's
// profilekit.dev/reverify annotation asks), so a resync makes no call.
// Revoke removes our annotation and our statement from every role we
// trusted; a role the Profile stops naming loses our statement too. While
// IAM fails, the finalizer keeps a deleted Profile and the plugin tries
// again.
//
// Host configuration:
//
//	AwsIamForServiceAccount:
//	  enabled: listed
//	  defaults:
//	    serviceAccounts: [default-editor]
//	    oidcProvider: arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC123
//	    audience: sts.amazonaws.com
//	    subjects: exact
//	    maxPolicySize: 2048
//	    adoptStatements: false
//	    allowedIdentities:
//	    - identity: "arn:aws:iam::111122223333:role/kf-{{ .Namespace }}"
//	    - identity: arn:aws:iam::111122223333:role/ml-team
//	      profileSelector: {matchLabels: {team: ml}}
//	      shared: true
//	    - tag: {key: profilekit.dev/namespace, value: "{{ .Namespace }}"}
//
// A role is the platform's to hand out: a Profile may name only a role an
// allowance of allowedIdentities gives it (IdentityNotAllowed otherwise,
// and for every role while the list is empty), checked before anything is
// written, the annotation included; a role that another Profile's record
// holds is a Conflict naming that Profile unless its allowance is shared
// (the wildcard subject form serves every Profile and is not checked). An
// allowance with a tag also asks IAM for the role's tags before the trust
// policy is written (iam:GetRole returns them): with the tag alone it
// allows any role the platform has tagged for the Profile. When a Profile
// goes, stops listing the plugin or is no longer allowed the role, its
// statement goes from the role it names and from every role the
// allowances name for it, record or not.
//
// The host calls IAM with the AWS SDK's default credential chain
// (environment, EKS pod identity, or IRSA for the host itself); it needs
// iam:GetRole and iam:UpdateAssumeRolePolicy on the roles Profiles name.
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind] and the
// spec fields upstream's plugin takes (awsIamRole, annotateOnly),
// [Definition], [NewIAM] and [DefaultIAM], [Config] and [NewConfig] with the
// JSON names, defaults and meaning of their fields, the Sids of the plugin's
// statements (which Revoke looks for), the annotation [AnnotationRoleARN],
// [ReasonTrustPolicyTooLarge] and the system name AWSIAM ([System]), and the
// condition AwsIamForServiceAccountReady. The [IAM] interface is stable for
// callers; implementations outside this module (test doubles) may need a new
// method in a minor release. Experimental, and free to change in a minor
// release: [RoleName], [ErrNoRole], [Plugin], the subjects modes' constants
// [SubjectsExact] and [SubjectsWildcard], [DefaultServiceAccount], and package
// trustpolicy; run the plugin through its [Definition], and use these for
// tests and previews.
package irsa
