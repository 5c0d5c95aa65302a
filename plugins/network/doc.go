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
// ingress from the ingress gateway) and multitenant (tenants reach each other
// only through namespaces with a trusted label).
//
// Host configuration, a StatCan-style set (testdata/statcan.yaml has all of
// it, with Knative ingress, unclassified HTTPS egress and Artifactory):
//
//	network:
//	  enabled: all
//	  defaults:
//	    policies:
//	    - name: allow-same-namespace
//	      podSelector: {}
//	      policyTypes: [Ingress]
//	      ingress:
//	      - from: [{podSelector: {}}]
//	    - name: allow-system-to-notebook
//	      podSelector:
//	        matchExpressions: [{key: notebook-name, operator: Exists}]
//	      policyTypes: [Ingress]
//	      ingress:
//	      - from:
//	        - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: istio-system}}
//	        - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kubeflow}}
//	        ports: [{protocol: TCP, port: 8888}]
//	    - name: allow-protected-b-https-egress
//	      podSelector:
//	        matchLabels: {data.aaw.example.ca/classification: protected-b}
//	      policyTypes: [Egress]
//	      egress:
//	      - to: [{ipBlock: {cidr: 10.130.0.0/16, except: [10.130.200.0/24]}}]
//	        ports: [{protocol: TCP, port: 443}]
//	    - name: allow-vault-egress
//	      podSelector: {}
//	      policyTypes: [Egress]
//	      egress:
//	      - to:
//	        - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: vault-system}}
//	          podSelector: {matchLabels: {app.kubernetes.io/name: vault}}
//	        ports: [{protocol: TCP, port: 8200}]
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
// Stable under semver (see the README's Versioning section): Kind,
// Definition, Config, Policy, Gate and GateValue with the JSON names and
// meaning of their fields, LoadConfig, the preset names Presets lists, and
// the condition NetworkReady. Experimental, and free to change in a minor
// release: Build, Desired and Gated; run the plugin through its Definition,
// and use these for tests and previews.
//
// A preset's policies may be tightened in a minor release; the CHANGELOG
// says so when one is.
package network
