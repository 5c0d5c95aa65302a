// Package blobcsi gives every Profile Azure Blob storage that notebooks
// mount through the blob CSI driver (blob.csi.azure.com).
//
// For each storage instance a Profile gets (the host offers them; a Profile
// may choose among them), the plugin creates a blob container named from the
// namespace, once, in the instance's storage account, and writes a
// PersistentVolume (Retain, the CSI driver, a volume handle unique in the
// cluster, the container's attributes, the instance's Secret for mounting, a
// claim reference) and a PersistentVolumeClaim bound to it in advance in the
// Profile's namespace. Read-only instances get ReadOnlyMany volumes mounted
// with -o ro. A resync with the container known to exist makes no Azure call
// (the outside-state record in plugins.Outside); a transient Azure error is a
// retried error on the condition.
//
// Shared buckets come from grants sources (package opa): an OPA gateway,
// polled, or a ConfigMap, watched, one per classification. Each bucket a
// Profile's namespace may mount becomes another pair: readers get a
// read-only volume, writers a read-write one. Only the Profiles whose grants
// change are reconciled. A source that is unreachable, malformed, undefined,
// or would withdraw too many grants at once keeps its last good grants:
// nothing is removed, and the Profiles concerned report BlobcsiReady=False
// with reason GrantsStale. A restart does not reset that guard: the first
// document after a start is checked against the grants that the plugin's
// PersistentVolumes with a live claim stand for (their LabelSource, and the
// volume name the claim template gave their claims; not claims alone, which
// a tenant could forge in its namespace, nor a volume whose bound claim was
// made again under its name), and one that would withdraw more
// than maxDropShare of them is refused. Until a source has a snapshot
// (refused, OPA down, the ConfigMap missing), none of its volumes is added
// or removed and every Profile reports GrantsNotSynced with the source's
// reason; its first snapshot reconciles every Profile.
//
// # Credentials
//
// Each instance says how profilekit reaches its account to create and
// delete containers (credentials.type): AccountKey (the default) signs
// with the key in the instance's Secret (azurestorageaccountname,
// azurestorageaccountkey); ServicePrincipal gets a Microsoft Entra ID token
// with one of the host's principals (client ID, tenant, the client secret
// under azurestoragespnclientsecret in the principal's Secret, and its
// authority host, aadEndpoint); WorkloadIdentity gets one with the host's
// own federated identity (client ID, tenant, projected token file and
// authority host, from the config or else from the AZURE_* variables the
// workload identity webhook sets). Tokens are asked for only when a
// container is created or deleted; secrets are read from Secrets and never
// logged or put on a condition. WithHTTPClient carries the token requests
// too (a private CA, a proxy).
//
// Mounting follows the blob CSI driver's documented service principal
// auth: a shared bucket whose grant names a principal (its spn) gets a
// PersistentVolume with the volume attributes AzureStorageAuthType=spn,
// AzureStorageSPNClientID, AzureStorageSPNTenantID and
// AzureStorageAADEndpoint, and the principal's Secret as node-stage Secret
// (the driver reads azurestoragespnclientsecret from it). Other volumes
// mount with the instance's account-key Secret, or with the instance's
// principal when it has none. A grant that names a principal the host does
// not have is an error on the condition for that volume (reason
// UnknownPrincipal): the volume is not written, an existing one is kept,
// and the Profile's other volumes go on.
//
// # Containers are a shared space
//
// A storage account is shared with other tenants and other software, so the
// plugin proves what it made. ContainerName is injective: a valid rendered
// name is kept unless it ends like a hashed name, and every other name gets
// 20 hexadecimal digits of its SHA-256, so that two Profiles never get one
// container. A container the plugin creates carries metadata (MetaPlugin,
// MetaProfile, MetaProfileUID) that proves it was made for that Profile. A
// container that exists at the wanted name without that proof (made by
// hand, by other software, or for an earlier Profile of the same name) is a
// Conflict on the condition, naming it: it is not written to, not mounted
// (no volume is written for it) and never deleted, unless the instance sets
// adoptContainers, the explicit opt-in that stamps the proof on it and
// takes it over. Containers made by versions that wrote no proof are
// recognised by a key of their instance that the host itself recorded as
// made (Outside.Made; a record moved from the Profile's namespace, where
// the tenant could write it, is no proof): the next pass stamps the proof
// on them and records them anew. A container whose proof names an earlier
// Profile of the name that the Profile's owner held (Outside.Predecessors)
// is the Profile's too: the owner coming back mounts it again. Revoke with
// retention Delete deletes a container only when it carries the Profile's
// proof (or that earlier key), and only if it was not modified since the
// proof was read.
//
// Removal (a grant withdrawn, an instance no longer chosen, the plugin
// revoked) deletes the claim, then the PersistentVolume once the claim is
// gone. Pods are never deleted or evicted: while a pod mounts a claim, the
// API server's pvc-protection finalizer keeps it, and the condition
// (reason VolumeInUse) names the pods. A change to an immutable field (the
// volume source, the access mode) replaces the pair when nothing mounts it.
// More than maxVolumeDeletes deletions within deleteWindow across the
// cluster are held and reported (VolumeDeletesHeld). The deletions are
// counted in a ConfigMap the plugin owns (deleteRecord; by default
// profilekit-blobcsi-deletes beside the first instance's credentials
// Secret), patched with its resourceVersion as a precondition, so that the
// cap holds across restarts and across hosts that share a cluster; a
// ConfigMap of that name without the plugin's labels is a Conflict and
// holds every deletion. Revoke keeps the containers unless the host's
// retention is Delete.
//
// Host configuration (see examples/host/config/statcan-storage.yaml for
// three instances, two grant sources and a principal per classification):
//
//	blobcsi:
//	  enabled: all
//	  retention: Retain
//	  defaults:
//	    storage:
//	    - name: standard
//	      classification: unclassified
//	      account: examplestandard
//	      credentials: {secretName: standard-storage, secretNamespace: profilekit-system}
//	      default: true
//	      # adoptContainers: true   # take over containers without our proof
//	    grantSources:
//	    - name: unclassified
//	      instance: standard
//	      opa: {url: "http://opa.gateway:8181", path: storage/grants/unclassified, interval: 30s}
//	    - name: protected-b
//	      classification: protected-b
//	      account: exampleprotb
//	      credentials: {type: ServicePrincipal, principal: fdi-protected-b}
//	    principals:
//	      fdi-protected-b:
//	        clientID: 00000000-0000-0000-0000-00000000000b
//	        tenantID: 00000000-0000-0000-0000-0000000000f0
//	        secret: {name: fdi-protected-b-spn, namespace: profilekit-system}
//	        aadEndpoint: https://login.microsoftonline.com/
//	    pvcLabels: {automount.example.org/blob: "true"}
//	    deleteRecord: {namespace: profilekit-system, name: profilekit-blobcsi-deletes}
//
// A Profile that chooses its instances:
//
//	apiVersion: kubeflow.org/v1
//	kind: Profile
//	metadata:
//	  name: team-a
//	spec:
//	  owner: {kind: User, name: alice@example.org}
//	  plugins:
//	  - kind: blobcsi
//	    spec:
//	      instances: [standard, standard-ro]
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition] and its options ([Option], [WithHTTPClient]), [Config] and the
// types it holds ([Instance], [Credentials], [CredentialType] with
// [AccountKey], [ServicePrincipal] and [WorkloadIdentity],
// [WorkloadIdentityCredentials], [Principal], [SecretRef], [GrantSource],
// [OPASource], [ConfigMapSource], [Names]) with the JSON names, defaults and
// meaning of their fields, the labels [LabelInstance] and [LabelSource], the
// Secret keys ([SecretAccountName], [SecretAccountKey],
// [SecretSPNClientSecret]), the container metadata keys ([MetaPlugin],
// [MetaProfile], [MetaProfileUID]), the reasons ([ReasonGrantsStale],
// [ReasonGrantsNotSynced], [ReasonVolumeInUse], [ReasonVolumeDeletesHeld],
// [ReasonUnknownPrincipal]), the outside systems in metrics and reasons
// ([SystemAzureBlob], [SystemOPA]), the driver and the attributes a
// PersistentVolume carries ([Driver], [AttrAuthType], [AttrSPNClientID],
// [AttrSPNTenantID], [AttrAADEndpoint], [AuthTypeSPN]), and the condition
// BlobcsiReady. The names it derives from a namespace (containers, volumes,
// claims) are stable too: changing one would strand data that exists.
//
// Experimental, and free to change in a minor release: [Desired], [Volume],
// [Mount], [BuildPV], [BuildPVC] and [ContainerName] as Go functions (run
// the plugin through its [Definition], and use these for tests and
// previews); [Plugin], [NewConfig], [DefaultMaxVolumeDeletes],
// [DefaultDeleteWindow], [DefaultDeleteRecord], [DefaultAADEndpoint] and
// [DefaultPVName] (the value of names.persistentVolume by default is the
// stable part).
package blobcsi
