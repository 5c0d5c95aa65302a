# Bucket grants for profilekit's blobcsi plugin, computed from data.
#
# data.storage.teams maps a team to its namespaces (Profile names);
# data.storage.buckets describes each shared bucket: its classification, the
# teams that read and write it, the identity that mounts it, and optionally a
# volume name and a subfolder. data.storage.classifications lists the
# classifications a gateway serves, so that one without buckets is an empty
# list, not an undefined document.
#
#   GET /v1/data/storage/grants/unclassified   -> the list shape
#   GET /v1/data/storage/gateway/unclassified  -> the gateway shape
package storage

members(teams) := sort([ns | some ns in {n | some t in teams; some n in object.get(data.storage.teams, t, [])}])

buckets_of(c) := {name: b | some name, b in data.storage.buckets; b.classification == c}

volume(name, b) := object.get(b, "volume", name)

grants[c] := sort_by_volume([entry |
	some name, b in buckets_of(c)
	entry := {
		"bucketName": name,
		"pvName": volume(name, b),
		"subfolder": object.get(b, "subfolder", ""),
		"readers": members(object.get(b, "readers", [])),
		"writers": members(object.get(b, "writers", [])),
		"spn": object.get(b, "spn", ""),
	}
]) if {
	some c in data.storage.classifications
}

# The shape gateways publish: keyed by bucket, beside their own keys.
gateway[c] := object.union({name: entry |
	some name, b in buckets_of(c)
	entry := {
		"readers": members(object.get(b, "readers", [])),
		"writers": members(object.get(b, "writers", [])),
		"spn": object.get(b, "spn", ""),
		"name": volume(name, b),
	}
}, {"httpapi": {"allow": true}}) if {
	some c in data.storage.classifications
}

sort_by_volume(entries) := [e | some v in sort([x.pvName | some x in entries]); some e in entries; e.pvName == v]
