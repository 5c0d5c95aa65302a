// Package apply writes a plugin's objects for one Profile: the [Applier]
// that hosts give a plugin as its request's Objects, and the [Recorder]
// that offline rendering gives it instead.
//
// Sync takes the plugin's complete desired set as apply configurations,
// adds the ownership labels, the owner reference to the Profile and a hash of
// the configuration, sends nothing for an object whose live copy already
// holds all of that, applies the rest server-side under the plugin's field
// manager, and deletes by label the plugin's objects that are no longer
// desired. An object of a desired name that is not the plugin's is never
// written. An object of a kind the plugin keeps whole (WithExclusive) on
// which another manager set fields is deleted, ours by UID, and made again. A host builds one Applier per pass:
//
//	objects := apply.New(c, def.Kind(), profile, def.Owns,
//		append(apply.OptionsFor(def), apply.WithLiveReader(apiReader))...)
//	req := plugins.Request{Profile: profile, Client: c, Objects: objects, ...}
//
// # Stability
//
// Stable under semver: [Applier] with [New], its Sync, Apply, DeleteAll and
// Keep; [Option] with [WithLiveReader], [WithScheme] and [WithAnyNamespace];
// [OptionsFor]; [Recorder] with [NewRecorder] and [Recorder.Recorded];
// [Encoded].
//
// Experimental, and free to change in a minor release: [Applier.Adopting]
// and [Recorder.Adopting] with [WithUpstreamObjects], which serve the core
// plugin alone; [Applier.Annotate], Unannotate, [Applier.Mark] and Unmark,
// and the Recorder's other methods; [WithMetadataOnly] with [NewMetadata],
// [NewMetadataList] and [FieldNames]; [Fields]; [NewObject] and [NewList];
// [WriteObserver] with [WithWriteObserver] and [WriteRecall]; [Replaceable]
// and [ReasonImmutableField]; [WithShardLabels] with [ShardKey],
// [ShardLabelPrefix] and [ObjectShard]; [WithExclusive]; [RepairGate] with
// [RepairHold] and [WithRepairGate].
package apply
