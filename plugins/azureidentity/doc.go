// Package azureidentity lets a Profile's workloads on AKS act as a
// user-assigned managed identity through Azure workload identity.
//
//	spec:
//	  plugins:
//	  - kind: AzureWorkloadIdentity
//	    spec:
//	      identity: /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubeflow/providers/Microsoft.ManagedIdentity/userAssignedIdentities/team-a
//	      clientId: 11111111-1111-1111-1111-111111111111
//
// The plugin puts the annotation azure.workload.identity/client-id (and
// azure.workload.identity/tenant-id when the host sets tenantId) on the
// Profile's workload service accounts (default-editor unless the host lists
// others), which the core plugin or the upstream controller makes: it never
// creates, updates or deletes one, and owns its annotation keys through
// server-side apply under its field manager (profilekit-AzureWorkloadIdentity),
// so that other annotations stay. Pods still opt in with the label
// azure.workload.identity/use: "true", as the webhook requires.
//
// Unless annotateOnly, it puts one federated identity credential per service
// account on the identity, named by CredentialName, with the cluster's OIDC
// issuer (host configuration), the subject
// system:serviceaccount:<namespace>:<name> and the audience
// api://AzureADTokenExchange. Azure is called only when what the plugin wants
// changed since it last made it true (or on the host's re-verify period, or
// the Profile's profilekit.dev/reverify annotation). Revoke removes our
// annotations and deletes our credentials only (for a Profile being
// deleted, also those of our names on the identity its spec names that are
// exactly what the plugin puts, record or not); the identity's other
// credentials stay, and those of our names that trust the namespace are
// reported, when the Profile is deleted, as dangling trust, which holds
// the next Profile of the name until an administrator clears it. While Azure fails, the finalizer keeps a deleted Profile
// and the plugin tries again.
//
// # What is ours on an identity
//
// An identity's credentials are shared with other tenants and other
// software. Credential names are profilekit-<namespace>_<name> (dots of the
// name as underscores), or, past Azure's 120 characters, profilekit-, a
// readable start, a dash and the SHA-256 of <namespace>/<name>; neither a
// namespace nor a service account name holds an underscore, so no two
// service accounts share a name, and the two forms never meet. A credential
// of the wanted name is the plugin's for this Profile when its issuer,
// subject and audiences are exactly what the plugin writes, or when the
// plugin's outside-state record (its labelled ConfigMap in the Profile's
// namespace) says the plugin made it and its subject is still the service
// account's. Any other credential of that name is a Conflict condition that
// names its issuer, subject and audiences, and nothing is touched. Revoke
// deletes a recorded credential only while its subject is a service account
// of this Profile whose credential name it bears; one that someone replaced
// is left, and forgotten. A credential is written to the record before it is
// put, and nothing is put while the record cannot be written, so that a
// credential put by a pass that stopped before the end is still deleted
// once the Profile lets it go; such a credential, recorded but never
// recorded as made, proves nothing: it is deleted only when it is exactly
// what the plugin puts.
//
// Versions before this naming used profilekit-<namespace>-<name>, which two
// service accounts could share. A credential of that name that the record
// holds, with the service account's subject, is deleted and made again under
// the new name, the old one first because Azure takes one credential per
// issuer and subject; one the record does not hold is someone else's and
// stays (then Azure may refuse the new one until it is removed by hand).
//
// Host configuration:
//
//	AzureWorkloadIdentity:
//	  enabled: listed
//	  defaults:
//	    issuer: https://westeurope.oic.prod-aks.azure.com/00000000-0000-0000-0000-000000000000/11111111-1111-1111-1111-111111111111/
//	    tenantId: 00000000-0000-0000-0000-000000000000
//	    serviceAccounts: [default-editor]
//	    allowedIdentities:
//	    - identity: "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubeflow/providers/Microsoft.ManagedIdentity/userAssignedIdentities/kf-{{ .Namespace }}"
//
// An identity is the platform's to hand out: a Profile may use only an
// identity (by resource ID; by client ID for annotateOnly without one) an
// allowance of allowedIdentities gives it (IdentityNotAllowed otherwise,
// and for every identity while the list is empty), checked before anything
// is written, the annotations included; an identity that another Profile
// has claimed is a Conflict naming that Profile unless its allowance is
// shared. An allowance with a tag also reads the identity's resource tags
// before a credential is put (with the tag alone it allows any identity
// the platform has tagged for the Profile). When a Profile goes, stops
// listing the plugin or is no longer allowed the identity, its credentials
// go from the identity it names and from every identity the allowances
// name for it, record or not.
//
// The host calls Azure with the SDK's default credential chain (workload
// identity, managed identity or the environment); it needs
// Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials
// read, write and delete on the identities Profiles name, and
// Microsoft.ManagedIdentity/userAssignedIdentities/read where an allowance
// asks for a tag.
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition], [NewCredentials] with its options ([Option],
// [WithClientOptions]) and [DefaultCredentials], [Config] and [NewConfig] with
// the JSON names, defaults and meaning of their fields, the annotations
// [AnnotationClientID] and [AnnotationTenantID], the credential names
// [CredentialName] gives (which Revoke looks for), the system name
// AzureIdentity ([System]), and the condition AzureWorkloadIdentityReady. The
// [Credentials] interface is stable for callers; implementations outside this
// module (test doubles) may need a new method in a minor release.
// Experimental, and free to change in a minor release: [ParseIdentity],
// [IdentityRef], [Credential] and [CredentialPrefix], [ErrNoIdentity], [Plugin], and the
// constants of the defaults ([DefaultAudience], [DefaultServiceAccount]); run
// the plugin through its [Definition], and use these for tests and previews.
package azureidentity
