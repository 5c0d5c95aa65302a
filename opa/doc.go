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
// # A restart does not reset the drop guard
//
// After a start there is no snapshot in memory to compare the first document
// with. A consumer that made something from the grants (blobcsi's volumes)
// says what it holds through Options.Baseline: one Grant (a namespace and a
// volume) per thing it made. The first document is checked against that
// under MaxDropShare exactly as a later one is against the last snapshot; a
// document that would withdraw more is refused with ReasonDropTooLarge, and
// the source stays not synced (State().Synced false, State().Err saying
// why), so that the consumer removes nothing. A Baseline that fails refuses
// the document too (ReasonNoBaseline). Synced() is closed when the first
// good snapshot is taken, for consumers that must then reconcile everything.
//
// # Cost
//
// Dropped, DroppedFrom and Changed are linear in the grants they compare
// (227,940 grants of one namespace take milliseconds). A refresh does its
// work before it swaps the new snapshot in atomically, and State() reads the
// snapshot without a lock: readers (every reconcile) never wait on a refresh
// in progress. Refreshes of one source are serialised.
//
// examples/opa holds a Rego policy that computes both shapes from data; the
// tests run it on a real OPA server.
//
// A Poller of a gateway's document, as the blobcsi plugin runs one per
// grantSources entry:
//
//	c, err := opa.NewClient("http://opa.gateway:8181")
//	p, err := opa.NewPoller("unclassified", c, "storage/grants/unclassified", nil,
//		opa.Options{Interval: 30 * time.Second, MaxDropShare: 0.5,
//			// The grants the volumes in the cluster stand for.
//			Baseline: func(ctx context.Context) ([]opa.Grant, error) { return volumesInUse(ctx) }})
//	go p.Run(ctx, func(namespaces []string) { /* reconcile these Profiles */ })
//	grants := p.State().Grants.For("team-a")
//
// # Stability
//
// Stable under semver (see the README's Versioning section): the grants
// document's two shapes as [Decode] reads them, [Grants], [Bucket], [Access]
// and [Mode] ([ReadOnly], [ReadWrite]), the [Source] interface for callers,
// [State], the Reason constants ([ReasonMissing], [ReasonMalformed],
// [ReasonUndefined], [ReasonUnreachable], [ReasonNoBaseline],
// [ReasonDropTooLarge]), the metric names, [Client] with [NewClient] and its
// options ([ClientOption], [WithHTTPClient]), [NewPoller] and
// [NewConfigMapSource] with the [Poller] and [ConfigMapSource] they return and
// [Options] (Baseline included), [Grant]. Experimental: [Changed], [Dropped]
// and [DroppedFrom], [DecodeList], [DecodeGateway] and [DecodeConfigMap] as
// separate entry points, [NewGrants], [ValidateContainerName], [ErrUndefined],
// [RefreshError], the constants of the defaults ([DefaultInterval],
// [DefaultMaxDropShare]), and the [Source] interface for implementations
// outside this module, which may need a new method in a minor release (Synced
// was one).
package opa
