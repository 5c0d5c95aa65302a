// Package volumes gives every Profile its personal volumes and keeps the data
// when the Profile goes, to give it back when the Profile returns.
//
// The host offers volume templates (a StorageClass, a size, access modes,
// labels such as the one that makes notebooks mount the volume, and an
// optional cap up to which a Profile may ask for more). A Profile chooses
// among them; the host's choice is the default. For each chosen template the
// plugin writes a PersistentVolumeClaim in the Profile's namespace, with our
// labels and the owner's name in the volumes.profilekit.dev/owner
// annotation. A larger size on a live claim is an expansion when the
// StorageClass allows it; otherwise the claim keeps its size and
// VolumesReady=False (reason ExpansionNotAllowed) says why.
//
// Once a claim is bound, the plugin applies to its PersistentVolume, under
// its own field manager and nothing else, persistentVolumeReclaimPolicy:
// Retain and labels that name the Profile, the template and a hash of the
// owner (volumes.profilekit.dev/owner; the name itself is an annotation), so
// that the volume can be found again. The volume is cluster-scoped, so the
// plugin keeps a finalizer on the Profile.
//
// When the Profile is deleted or the plugin revoked, the claim goes (with
// the namespace, or deleted by Revoke) and the volume stays Released, marked
// with when it was let go (the volumes.profilekit.dev/released-at label in
// Unix seconds, and an annotation in RFC 3339). A volume that bound to a
// claim of the Profile before any pass marked it (a host that was down, a
// Profile changed a moment after the binding) is marked, Retain, before its
// claim is deleted; the claim stays until that write succeeds. When a Profile of the same
// name and the same owner comes back (or, with match: Owner, any Profile of
// that owner), the plugin points the retained volume's claimRef at the new
// claim, without the old claim's uid, and writes the claim with volumeName,
// so that it binds to the same volume: a claim never gets a new, empty
// volume while a retained one waits for it. A volume retained for another
// owner is never given, relabelled or touched.
//
// Retention: Retain (the host's default for user data) keeps released volumes
// until an administrator deletes them, or, with retainFor, until the
// Sweeper deletes those released longer ago than that (its first sweep,
// in the host, waits for the plugin's first pass over every Profile): it
// logs the volumes past retention first (sweepDryRun: true stops there),
// deletes at most
// maxDeletesPerSweep per sweepInterval, oldest first, after giving each the
// reclaim policy Delete so that its provisioner also deletes the storage.
// It decides on each volume from the API server's copy, read right before,
// and writes with that copy's resourceVersion as a precondition: a volume a
// returning Profile takes back meanwhile is left (SweepReport.Spared), and
// so is one whose owner has a Profile again, as the API server lists them
// (made while the host was down, its pass has not taken the volume back
// yet). A Profile that goes before its claim bound a reserved volume gives
// the reservation back: the volume is not left for a claim of that name in
// the next namespace of that name; the sweeper takes back one an earlier
// version left, once no Profile of its owner exists.
// The deletions are counted in a ConfigMap (sweepRecord, by default
// profilekit-volumes-sweeps in the host's namespace), so that a host that
// restarts, and sweeps at once, does not start counting from zero. Retention
// Delete restores the StorageClass's own reclaim policy, so that the volume
// goes with its claim.
//
// Host configuration (StatCan style: one home volume per Profile that
// notebooks mount, up to 100Gi on request):
//
//	volumes:
//	  enabled: all
//	  retention: Retain
//	  defaults:
//	    templates:
//	    - name: home
//	      claimName: workspace
//	      storageClassName: standard
//	      size: 16Gi
//	      maxSize: 100Gi
//	      labels: {notebooks.example.org/automount: "true"}
//	    volumes:
//	    - template: home
//	    retainFor: 720h
//	    sweepDryRun: true
//	    maxDeletesPerSweep: 10
//
// A Profile that asks for a larger home volume:
//
//	apiVersion: kubeflow.org/v1
//	kind: Profile
//	metadata:
//	  name: team-a
//	spec:
//	  owner: {kind: User, name: alice@example.org}
//	  plugins:
//	  - kind: volumes
//	    spec:
//	      volumes:
//	      - template: home
//	        size: 50Gi
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition], [Config], [Template], [Volume] and [Match] ([MatchOwner],
// [MatchProfile]) with the JSON names, defaults and meaning of their fields,
// the labels and annotations it writes on claims and volumes ([LabelTemplate],
// [LabelOwner], [AnnotationOwner], [LabelReleasedAt], [AnnotationReleasedAt])
// and the [OwnerHash] they hold, by which a returning Profile finds its
// volume, [ReasonExpansionNotAllowed], and the condition VolumesReady.
// Experimental, and free to change in a minor release: [Claim], [ClaimSize],
// [State], [VolumeState], [Reclaim], [Seeker], [Reserved], [Sweeper] and
// [SweepReport], [SweeperFieldManager], [DefaultSweepRecord], [NewConfig] and [Plugin]; run the
// plugin through its [Definition], and use these for tests and previews.
package volumes
