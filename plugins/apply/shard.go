package apply

// This file holds the shard labels: a sharded host's objects carry their
// Profile's values of the shard selector's label keys, under keys of
// profilekit's own, so that the host can cache its own shard's objects.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// ShardLabelPrefix starts the label keys under which objects carry their
// Profile's shard labels (ShardKey).
const ShardLabelPrefix = "shard.profilekit.dev/"

// ShardKey returns the label key under which objects carry their Profile's
// label key: ShardLabelPrefix, the key's name (after its prefix, cut to 54
// characters), a dash and eight hex digits of the SHA-256 of the whole key.
// A value a Profile carries, which a self-serve tenant may have chosen,
// thus never lands on an object, the Profile's namespace above all, under a
// key that anything else selects on (a network policy's namespace selector,
// Pod Security admission, sidecar injection).
func ShardKey(key string) string {
	name := key
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		name = key[i+1:]
	}
	if len(name) > 54 {
		name = name[:54]
	}
	sum := sha256.Sum256([]byte(key))
	return ShardLabelPrefix + name + "-" + hex.EncodeToString(sum[:4])
}

// ObjectShard returns the selector of the objects of the Profiles that
// shard selects: each of its requirements over ShardKey of its key. nil,
// or a selector of every Profile, selects every object.
func ObjectShard(shard labels.Selector) (labels.Selector, error) {
	out := labels.Everything()
	if shard == nil {
		return out, nil
	}
	reqs, _ := shard.Requirements()
	for _, r := range reqs {
		req, err := labels.NewRequirement(ShardKey(r.Key()), r.Operator(), r.ValuesUnsorted())
		if err != nil {
			return nil, fmt.Errorf("shard selector %q: %w", shard.String(), err)
		}
		out = out.Add(*req)
	}
	return out, nil
}

// shardKeys returns the label keys shard reads.
func shardKeys(shard labels.Selector) []string {
	if shard == nil {
		return nil
	}
	reqs, _ := shard.Requirements()
	keys := make([]string, 0, len(reqs))
	for _, r := range reqs {
		keys = append(keys, r.Key())
	}
	return keys
}
