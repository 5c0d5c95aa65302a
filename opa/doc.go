// Package opa reads bucket grants from the policy services platforms already
// run: a small client of OPA's Data API (/v1/data/...) and two grants
// sources behind one interface, Source.
//
// A grants document lists shared buckets (blob containers), each with a
// volume name, an optional subfolder, the namespaces that read it, the
// namespaces that write it, and the identity that mounts it. Decode accepts
// it as a list,
//
//	[{"bucketName": "census", "pvName": "census", "subfolder": "2026",
//	  "readers": ["team-a"], "writers": ["team-b"], "spn": "sp-census"}]
//
// or in the shape gateways publish, keyed by bucket, beside keys of their own
// (such as httpapi) that are ignored:
//
//	{"census": {"readers": ["team-a"], "writers": ["team-b"], "spn": "sp-census", "name": "census"},
//	 "httpapi": {...}}
//
// A Poller asks an OPA server at an interval; a ConfigMapSource watches one
// ConfigMap whose keys each hold a list. Both keep the last good snapshot:
// an unreachable server, an undefined document (OPA's answer without a
// result, which is not an empty grant set), a malformed document, a missing
// ConfigMap, or a document that would withdraw more than MaxDropShare of the
// current grants at once is rejected, counted in
// profilekit_grants_refresh_total{source,result}, logged once per reason,
// and shown in State().Err, so that consumers delete nothing. Run tells its
// caller which namespaces' grants changed, and only those; an unchanged poll
// tells nothing (profilekit_grants_notified_namespaces_total).
//
// examples/opa holds a Rego policy that computes both shapes from data; the
// tests run it on a real OPA server.
//
// A Poller of a gateway's document, as the blobcsi plugin runs one per
// grantSources entry:
//
//	c, err := opa.NewClient("http://opa.gateway:8181")
//	p, err := opa.NewPoller("unclassified", c, "storage/grants/unclassified", nil,
//		opa.Options{Interval: 30 * time.Second, MaxDropShare: 0.5})
//	go p.Run(ctx, func(namespaces []string) { /* reconcile these Profiles */ })
//	grants := p.State().Grants.For("team-a")
//
// # Stability
//
// Stable under semver (see the README's Versioning section): the grants
// document's two shapes as Decode reads them, Grants, Bucket, Access and
// Mode, the Source interface for callers, State, the Reason constants, the
// metric names, Client and its options, NewPoller and NewConfigMapSource
// with Options. Experimental: Changed and Dropped, DecodeList, DecodeGateway
// and DecodeConfigMap as separate entry points, and the Source interface for
// implementations outside this module, which may need a new method in a
// minor release.
package opa
