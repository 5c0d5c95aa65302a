// Package quotanames checks resource names and values the way the API server
// checks a ResourceQuota's hard limits, so that plugins that write quotas
// (quotas, budgets) refuse a bad config before they send a request.
package quotanames

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// standardNames are the resource names without a domain that the API server
// takes in a ResourceQuota's hard limits; hugepages-* and requests.hugepages-*
// are the others.
var standardNames = map[corev1.ResourceName]bool{
	corev1.ResourceCPU: true, corev1.ResourceMemory: true, corev1.ResourceEphemeralStorage: true,
	corev1.ResourceRequestsCPU: true, corev1.ResourceRequestsMemory: true, corev1.ResourceRequestsStorage: true,
	corev1.ResourceRequestsEphemeralStorage: true, corev1.ResourceLimitsCPU: true, corev1.ResourceLimitsMemory: true,
	corev1.ResourceLimitsEphemeralStorage: true, corev1.ResourcePods: true, corev1.ResourceQuotas: true,
	corev1.ResourceServices: true, corev1.ResourceReplicationControllers: true, corev1.ResourceSecrets: true,
	corev1.ResourcePersistentVolumeClaims: true, corev1.ResourceConfigMaps: true,
	corev1.ResourceServicesNodePorts: true, corev1.ResourceServicesLoadBalancers: true,
}

// countedNames are measured in whole numbers.
var countedNames = map[corev1.ResourceName]bool{
	corev1.ResourcePods: true, corev1.ResourceQuotas: true, corev1.ResourceServices: true,
	corev1.ResourceReplicationControllers: true, corev1.ResourceSecrets: true, corev1.ResourceConfigMaps: true,
	corev1.ResourcePersistentVolumeClaims: true, corev1.ResourceServicesNodePorts: true,
	corev1.ResourceServicesLoadBalancers: true,
}

// Check returns why the API server would refuse name as a hard limit of a
// ResourceQuota, or "": it must be a qualified name, and a name without a
// domain must be one of the standard quota resources. Object counts
// (count/pods, count/jobs.batch) carry a "/" and pass as names with a domain.
func Check(name corev1.ResourceName) string {
	if msgs := validation.IsQualifiedName(string(name)); len(msgs) > 0 {
		return "not a resource name: " + strings.Join(msgs, "; ")
	}
	if !strings.Contains(string(name), "/") && !standardNames[name] && !isHugePages(name) {
		return "not a resource a quota can limit (want a standard name such as limits.cpu, or a name with a domain)"
	}
	return ""
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) || strings.HasPrefix(string(name), "requests."+corev1.ResourceHugePagesPrefix)
}

// Counted reports whether the API server wants a whole number for name:
// object counts and extended resources (a domain other than kubernetes.io,
// not under requests.).
func Counted(name corev1.ResourceName) bool {
	if countedNames[name] {
		return true
	}
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/") || strings.HasPrefix(s, "requests.") {
		return false
	}
	return len(validation.IsQualifiedName("requests."+s)) == 0
}

// CheckValue returns why the API server would refuse q as the hard limit of
// name, or "".
func CheckValue(name corev1.ResourceName, q resource.Quantity) string {
	if Counted(name) && q.MilliValue()%1000 != 0 {
		return fmt.Sprintf("%s %s is not a whole number", name, q.String())
	}
	return ""
}
