// Package network gives every Profile's namespace a declared set of
// NetworkPolicies (networking.k8s.io/v1).
//
// The set is the host's configuration: each policy has a name, a pod
// selector, its policy types (always written, never left to the API server's
// default), and ingress and egress rules with namespace and pod selectors,
// ipBlocks with exceptions, and ports, in the shape of a NetworkPolicy's
// spec. In selector values, {{ .Namespace }} and {{ .Profile }} stand for the
// Profile's namespace and name; any other placeholder, or stray braces, fails
// the configuration at load, as do non-canonical CIDRs, exceptions outside
// their block and rules of a type the policy does not have. Every namespace,
// CIDR and label domain is configuration; the plugin knows none.
//
// A policy may have a gate: a Profile label, or a spec gate that the Profile
// sets in its spec.plugins entry. Gates fail closed: the policy is written
// only when the value parses as true (true, 1, t, ...). A missing or false
// value leaves it out; any other value (maybe, yes) leaves it out too and
// sets NetworkReady=False with reason InvalidLabel (or InvalidSpec for a spec
// gate) naming the gate, its value and the policy, while the other policies
// stay in sync. When a gate turns off, its policy is deleted. A Profile can
// only set gates: the policies themselves are host-only, so a tenant cannot
// widen its own network access.
//
// Policies are written with server-side apply and carry profilekit's labels;
// a NetworkPolicy without them is never modified or deleted, and one that
// holds a desired name is reported as a Conflict. A resync with nothing
// changed sends no request.
//
// Presets ship as configuration (see Preset and the presets folder):
// isolated (default deny; same-namespace traffic, DNS and istiod egress,
// ingress from the ingress gateway), multitenant (tenants reach each other
// only through namespaces with a trusted label) and statcan (StatCan's
// example: ten policies that separate unclassified from Protected B
// workloads by their data.statcan.gc.ca/classification label; ingress from
// the ingress gateway and Knative; egress to the cluster-local gateway,
// Vault, Kubeflow Pipelines, Elasticsearch and Artifactory for every
// workload; the internet and the ingress gateway for unclassified ones;
// HTTPS on the approved cloud network for Protected B ones). No preset is on
// unless the host names one in preset; its values are examples, so a policy
// of the same name under policies replaces one of the preset's in place,
// exclude leaves one out, and the host's other policies come after the
// preset's (see Config.Effective).
//
// Host configuration, a StatCan-style set (testdata/statcan.yaml has all of
// it, with the Gitea database and the S3 proxy's ingress):
//
//	network:
//	  enabled: all
//	  defaults:
//	    preset: statcan
//	    # This platform keeps its logs elsewhere.
//	    exclude: [allow-elasticsearch-egress]
//	    policies:
//	    # Its approved cloud network is another range: replaces the preset's.
//	    - name: allow-protected-b-https-egress
//	      podSelector:
//	        matchLabels: {data.statcan.gc.ca/classification: protected-b}
//	      policyTypes: [Egress]
//	      egress:
//	      - to: [{ipBlock: {cidr: 10.140.0.0/16}}]
//	        ports: [{protocol: TCP, port: 443}]
//	    - name: allow-same-namespace
//	      podSelector: {}
//	      policyTypes: [Ingress]
//	      ingress:
//	      - from: [{podSelector: {}}]
//	    - name: allow-gitea-ingress
//	      gate: {label: gitea.aaw.example.ca/enabled}
//	      podSelector: {matchLabels: {app: gitea}}
//	      policyTypes: [Ingress]
//	      ingress:
//	      - from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: istio-system}}}]
//	        ports: [{protocol: TCP, port: 3000}]
//	    - name: allow-s3proxy-egress
//	      gate: {spec: s3proxy}
//	      podSelector: {matchLabels: {app: s3proxy}}
//	      policyTypes: [Egress]
//	      egress:
//	      - to: [{ipBlock: {cidr: 0.0.0.0/0}}]
//	        ports: [{protocol: TCP, port: 443}]
//
// A Profile that turns on its Gitea (by label) and its S3 proxy (by spec):
//
//	apiVersion: kubeflow.org/v1
//	kind: Profile
//	metadata:
//	  name: team-a
//	  labels:
//	    gitea.aaw.example.ca/enabled: "true"
//	spec:
//	  owner: {kind: User, name: alice@example.org}
//	  plugins:
//	  - kind: network
//	    spec:
//	      gates: {s3proxy: true}
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition], [Config], [Policy], [Gate] and [GateValue] with the JSON names
// and meaning of their fields, [LoadConfig], the preset names [Presets] lists,
// and the condition NetworkReady. Experimental, and free to change in a minor
// release: [Build], [Desired], [Gated] and [Config.Effective], [Preset],
// [NewConfig] and [Plugin]; run the plugin through its [Definition], and use
// these for tests and previews.
//
// A preset's policies may be tightened in a minor release; the CHANGELOG says
// so when one is.
package network
