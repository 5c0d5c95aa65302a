package main

// This file holds the fault test of disjoint shards: each host touches only
// the Profiles of its shard.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
)

// requestScope returns the namespace a request path is in, or the Profile it
// names, or "" for cluster-wide requests (lists and watches).
func requestScope(path string) (namespace, profile string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		switch parts[i] {
		case "namespaces":
			return parts[i+1], ""
		case "profiles":
			return "", parts[i+1]
		}
	}
	return "", ""
}

// TestFaultDisjointShards runs two hosts with disjoint shard selectors: each
// serves its own Profiles only and sends no request about the others.
func TestFaultDisjointShards(t *testing.T) {
	id := rand.String(5)
	shards := map[string][]string{}
	hosts := map[string]*faultHost{}
	for _, s := range []string{"a", "b"} {
		shard := "shard-" + s + "-" + id
		cfg, reg := faultConfig(t, shard, "fault-shard-"+s+"-"+id, 100)
		hosts[s] = startHost(t, "shard "+s, env.Config, cfg, reg, true)
		for i := range 3 {
			name := fmt.Sprintf("fault-%s-%d", shard, i)
			faultProfile(t, env.Client, name, shard, i == 0)
			shards[s] = append(shards[s], name)
		}
	}
	// A Profile in neither shard is served by neither host.
	outside := "fault-shard-none-" + id
	faultProfile(t, env.Client, outside, "none-"+id, true)

	waitConverged(t, env.Client, 30*time.Second, slices.Concat(shards["a"], shards["b"])...)
	for s, h := range hosts {
		own := shards[s]
		for _, r := range h.log.all() {
			_, path, _ := strings.Cut(r, " ")
			ns, profile := requestScope(path)
			switch {
			case ns == "default" || (ns == "" && profile == ""):
				// The Lease, Events on the cluster-scoped Profiles, and
				// cluster-wide lists and watches.
			case ns != "" && !slices.Contains(own, ns):
				t.Errorf("host %s sent %s, outside its Profiles' namespaces %v", s, r, own)
			case profile != "" && !slices.Contains(own, profile):
				t.Errorf("host %s sent %s about a Profile outside its shard", s, r)
			}
		}
		if !slices.ContainsFunc(h.log.writes(), func(r string) bool { return strings.Contains(r, "/namespaces/"+own[0]+"/") }) {
			t.Errorf("host %s sent no write for its Profile %s", s, own[0])
		}
	}
	var p kubeflowv1.Profile
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: outside}, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Status.Conditions) != 0 {
		t.Errorf("Profile %s is in neither shard but has conditions %v", outside, p.Status.Conditions)
	}
	if got := ownedObjects(t, env.Client, outside); len(got) != 0 {
		t.Errorf("Profile %s is in neither shard but has objects:\n%s", outside, strings.Join(got, "\n"))
	}
	if d := diffSets(wantObjects(map[string]bool{shards["a"][0]: true, shards["a"][1]: false, shards["a"][2]: false}), ownedObjects(t, env.Client, "fault-shard-a-"+id)); d != "" {
		t.Errorf("shard a:%s", d)
	}
	if d := diffSets(wantObjects(map[string]bool{shards["b"][0]: true, shards["b"][1]: false, shards["b"][2]: false}), ownedObjects(t, env.Client, "fault-shard-b-"+id)); d != "" {
		t.Errorf("shard b:%s", d)
	}
}
