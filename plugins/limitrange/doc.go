// Package limitrange gives every Profile a LimitRange for its containers.
//
// The container limits (default, defaultRequest, min, max and
// maxLimitRequestRatio) come from the plugin's host defaults with the
// Profile's spec.plugins entry on top, resource by resource. They are checked
// when decoded: min is not above max, default and defaultRequest lie within
// min and max, defaultRequest is not above default, and the ratio of default
// to defaultRequest is within maxLimitRequestRatio. A Profile whose values
// fail is reported as LimitRangeReady=False and its LimitRange stays as it was.
// With no limits at all the plugin writes nothing.
//
// Host configuration:
//
//	limitrange:
//	  enabled: all
//	  defaults:
//	    container:
//	      default: {cpu: 500m, memory: 1Gi}
//	      defaultRequest: {cpu: 100m, memory: 256Mi}
//	      max: {cpu: "8", memory: 64Gi}
//
// A Profile that lets containers default to more memory:
//
//	spec:
//	  plugins:
//	  - kind: limitrange
//	    spec:
//	      container:
//	        default: {memory: 4Gi}
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition], [Config], [Limits] and [NewConfig] with the JSON names,
// defaults and meaning of their fields, the LimitRange profilekit-limits, and
// the condition LimitRangeReady. Experimental, and free to change in a minor
// release: [Build], [Plugin] and [DefaultName]; run the plugin through its
// [Definition], and use these for tests and previews.
package limitrange
