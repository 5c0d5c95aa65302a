package gitea

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/profilekit/profilekit/plugins/apps"
)

func TestPlacementAndBanner(t *testing.T) {
	t.Parallel()
	protectedB := Instance{
		Name:   "protected-b",
		Source: apps.Source{Helm: &apps.Helm{ValuesObject: map[string]any{"extraVolumes": []any{map[string]any{"name": "hosts-own"}}}}},
		Banner: &Banner{Text: "PROTECTED B <script>", Background: "#ffcc00"},
		Placement: Placement{
			NodeSelector: map[string]string{"node.example.org/classification": "protected-b"},
			Tolerations:  []corev1.Toleration{{Key: "node.example.org/classification", Operator: corev1.TolerationOpEqual, Value: "protected-b", Effect: corev1.TaintEffectNoSchedule}},
		},
	}.withDefaults()
	values := protectedB.app("team-a").Source.Helm.ValuesObject
	tests := []struct {
		reason string
		key    string
		want   any
	}{
		{"the pods go to the classification's nodes", "nodeSelector", map[string]any{"node.example.org/classification": "protected-b"}},
		{"and tolerate their taint", "tolerations", []any{map[string]any{"key": "node.example.org/classification", "operator": "Equal", "value": "protected-b", "effect": "NoSchedule"}}},
		{"the banner's ConfigMap is mounted after the host's own volumes", "extraVolumes", []any{
			map[string]any{"name": "hosts-own"},
			map[string]any{"name": "profilekit-banner", "configMap": map[string]any{"name": "gitea-protected-b-banner"}},
		}},
		{"over Gitea's custom header", "extraContainerVolumeMounts", []any{
			map[string]any{"name": "profilekit-banner", "mountPath": BannerMountPath, "subPath": BannerKey, "readOnly": true},
		}},
	}
	for _, tc := range tests {
		if d := cmp.Diff(tc.want, values[tc.key]); d != "" {
			t.Errorf("%s: values[%s] (-want +got):\n%s", tc.reason, tc.key, d)
		}
	}
	cm := protectedB.banner("team-a")
	if *cm.Name != "gitea-protected-b-banner" || *cm.Namespace != "team-a" {
		t.Errorf("banner ConfigMap %s/%s", *cm.Namespace, *cm.Name)
	}
	html := cm.Data[BannerKey]
	for _, want := range []string{"background:#ffcc00", "color:#000000", "PROTECTED B &lt;script&gt;"} {
		if !strings.Contains(html, want) {
			t.Errorf("banner %q lacks %q", html, want)
		}
	}

	unclassified := Instance{Name: "unclassified"}.withDefaults()
	v := unclassified.app("team-a").Source.Helm.ValuesObject
	for _, k := range []string{"nodeSelector", "tolerations", "extraVolumes", "extraContainerVolumeMounts"} {
		if _, ok := v[k]; ok {
			t.Errorf("an instance without placement or banner sets values[%s] = %v", k, v[k])
		}
	}
}

func TestPlacementAndBannerValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reason string
		in     Instance
		want   string
	}{
		{"markup in a colour", Instance{Banner: &Banner{Text: "x", Background: "red;position:fixed"}}, `background "red;position:fixed"`},
		{"an empty banner", Instance{Banner: &Banner{Text: " "}}, `text " "`},
		{"a node label that is not one", Instance{Placement: Placement{NodeSelector: map[string]string{"bad key!": "x"}}}, "nodeSelector[bad key!]"},
		{"an unknown toleration operator", Instance{Placement: Placement{Tolerations: []corev1.Toleration{{Key: "k", Operator: "Like"}}}}, `operator "Like"`},
	}
	for _, tc := range tests {
		in := tc.in.withDefaults()
		err := in.Banner.validate()
		if err == nil {
			err = in.Placement.validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.reason, err, tc.want)
		}
	}
}
