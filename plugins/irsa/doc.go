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
// Unless annotateOnly, it adds system:serviceaccount:<namespace>:<name> to
// the role's trust policy for the cluster's OIDC provider (from the host
// configuration, or the provider of the policy's first web identity
// statement). Every statement and condition it did not write is kept; a
// subject already there is not added again; a subject joins the provider's
// statement whose only conditions are the subject and audience match, or a
// new statement. A policy that would pass the size limit (IAM's default is
// 2,048 characters) is a TrustPolicyTooLarge condition that says by how
// much; the host may then raise maxPolicySize after raising the account's
// quota, or choose subjects: wildcard, which trusts the configured service
// account names in every namespace with one StringLike pattern. That form
// lets any namespace's default-editor assume the role, so it suits roles
// meant for all Profiles only; Revoke then leaves the pattern in place.
//
// IAM is called only when what the plugin wants changed since it last made
// it true (or when the host's re-verify period or the Profile's
// profilekit.dev/reverify annotation asks), so a resync makes no call.
// Revoke removes our annotation and only our subjects; a statement left
// without subjects is dropped rather than left trusting every service
// account. A role the Profile stops naming loses our subjects too.
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
//
// The host calls IAM with the AWS SDK's default credential chain
// (environment, EKS pod identity, or IRSA for the host itself); it needs
// iam:GetRole and iam:UpdateAssumeRolePolicy on the roles Profiles name.
//
// # Stability
//
// Stable under semver (see the README's Versioning section): Kind and the
// spec fields upstream's plugin takes (awsIamRole, annotateOnly),
// Definition, NewIAM and DefaultIAM, Config and NewConfig with the JSON
// names, defaults and meaning of their fields, the annotation
// AnnotationRoleARN, ReasonTrustPolicyTooLarge and the system name AWSIAM,
// and the condition AwsIamForServiceAccountReady. The IAM interface is
// stable for callers; implementations outside this module (test doubles) may
// need a new method in a minor release. Experimental, and free to change in
// a minor release: RoleName, and package trustpolicy; run the plugin through
// its Definition, and use these for tests and previews.
package irsa
