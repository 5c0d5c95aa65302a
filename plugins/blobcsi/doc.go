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
// with reason GrantsStale.
//
// Removal (a grant withdrawn, an instance no longer chosen, the plugin
// revoked) deletes the claim, then the PersistentVolume once the claim is
// gone. Pods are never deleted or evicted: while a pod mounts a claim, the
// API server's pvc-protection finalizer keeps it, and the condition
// (reason VolumeInUse) names the pods. A change to an immutable field (the
// volume source, the access mode) replaces the pair when nothing mounts it.
// More than maxVolumeDeletes deletions within deleteWindow across the
// cluster are held and reported (VolumeDeletesHeld). Revoke keeps the
// containers unless the host's retention is Delete.
//
// Host configuration (see examples/host/config/statcan.yaml for three
// instances and two grant sources):
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
//	    grantSources:
//	    - name: unclassified
//	      instance: standard
//	      opa: {url: "http://opa.gateway:8181", path: storage/grants/unclassified, interval: 30s}
//	    pvcLabels: {automount.example.org/blob: "true"}
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
// Stable under semver (see the README's Versioning section): Kind,
// Definition and its options (WithHTTPClient), Config and the types it holds
// with the JSON names, defaults and meaning of their fields, the labels
// LabelInstance and LabelSource, the Secret keys, the reasons
// (ReasonGrantsStale, ReasonGrantsNotSynced, ReasonVolumeInUse,
// ReasonVolumeDeletesHeld), and the condition BlobcsiReady. The names it
// derives from a namespace (containers, volumes, claims) are stable too:
// changing one would strand data that exists. Experimental, and free to
// change in a minor release: Desired, Volume, BuildPV, BuildPVC and
// ContainerName as Go functions; run the plugin through its Definition, and
// use these for tests and previews.
package blobcsi
