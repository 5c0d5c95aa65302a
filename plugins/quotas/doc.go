// Package quotas gives every Profile a ResourceQuota in its namespace.
//
// The quota's hard limits come, each overriding the one before, from the
// plugin's host defaults, the Profile's spec.plugins entry, and labels on the
// Profile named <labelPrefix>/<resource>. Labels serve GitOps set-ups that
// ignore Profile labels when they compare. A resource name that cannot be part
// of a label key (requests.nvidia.com/gpu) gets a short alias (gpu). Caps bound
// every value. An unparsable quantity, a value above its cap, or requests above
// limits leaves the quota in place as it was and is reported as
// QuotasReady=False naming the label or field and its value.
//
// The object is named by the host (profilekit-quota by default) and is never
// upstream's kf-resource-quota.
//
// Host configuration:
//
//	quotas:
//	  enabled: all
//	  defaults:
//	    name: profilekit-quota
//	    labelPrefix: quotas.example.org
//	    aliases: {gpu: requests.nvidia.com/gpu}
//	    caps: {limits.cpu: "64", requests.nvidia.com/gpu: "4"}
//	    hard: {requests.cpu: "8", limits.cpu: "16", requests.memory: 32Gi}
//
// A Profile that raises its CPU and asks for a GPU:
//
//	apiVersion: kubeflow.org/v1
//	kind: Profile
//	metadata:
//	  name: team-a
//	  labels:
//	    quotas.example.org/gpu: "1"
//	spec:
//	  owner: {kind: User, name: alice@example.org}
//	  plugins:
//	  - kind: quotas
//	    spec:
//	      hard: {limits.cpu: "32"}
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition], [Config] and [NewConfig] with the JSON names, defaults and
// meaning of their fields (the host's defaults and a Profile's spec), the
// override labels <labelPrefix>/<resource or alias>, the ResourceQuota
// profilekit-quota, and the condition QuotasReady. Experimental, and free to
// change in a minor release: [Build] and [Hard], whose Go signatures follow
// client-go's apply configurations, [Plugin] and [DefaultName]; run the plugin
// through its [Definition], and use these for tests and previews.
package quotas
