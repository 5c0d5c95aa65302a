package quotanames

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		reason string
		name   corev1.ResourceName
		want   string
	}{
		{"a standard name", "requests.cpu", ""},
		{"an extended resource", "requests.nvidia.com/gpu", ""},
		{"an object count", "count/pods", ""},
		{"huge pages", "requests.hugepages-2Mi", ""},
		{"a name without a domain that no quota limits", "gpus", "not a resource a quota can limit (want a standard name such as limits.cpu, or a name with a domain)"},
		{"not a qualified name", "bad name", "not a resource name: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			if got := Check(tt.name); got != tt.want {
				t.Errorf("Check(%q) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
}

func TestCheckValue(t *testing.T) {
	tests := []struct {
		reason string
		name   corev1.ResourceName
		q      string
		want   string
	}{
		{"CPU takes fractions", "requests.cpu", "1500m", ""},
		{"pods are counted in whole numbers", "pods", "1500m", "pods 1500m is not a whole number"},
		{"object counts too", "count/pods", "2.5", "count/pods 2500m is not a whole number"},
		{"extended resources outside requests. too", "nvidia.com/gpu", "0.5", "nvidia.com/gpu 500m is not a whole number"},
		{"a whole number is fine", "count/pods", "10", ""},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			if got := CheckValue(tt.name, resource.MustParse(tt.q)); got != tt.want {
				t.Errorf("CheckValue(%q, %s) = %q, want %q", tt.name, tt.q, got, tt.want)
			}
		})
	}
}
