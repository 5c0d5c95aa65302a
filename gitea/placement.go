package gitea

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// Banner is the classification banner an instance's Gitea shows at the top
// of every page, such as "PROTECTED B": a ConfigMap per instance in the
// Profile's namespace (BannerName), mounted over Gitea's custom header
// template (BannerMountPath).
type Banner struct {
	// Text is the banner's words. Required; at most 200 characters, shown
	// as text, never as markup.
	Text string `json:"text"`
	// Background is a CSS colour, a name or #rgb / #rrggbb. Default #ffffff.
	Background string `json:"background,omitempty"`
	// Foreground is the text's CSS colour. Default #000000.
	Foreground string `json:"foreground,omitempty"`
}

// Placement puts an instance's Gitea pods on the nodes of its
// classification, such as protected-b workloads on protected-b nodes. Both
// go to the chart as its nodeSelector and tolerations values.
type Placement struct {
	// NodeSelector is the nodes' labels the pods require.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations let the pods onto nodes tainted for the classification.
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// Where the banner goes in Gitea's pod: the custom header template, which
// Gitea renders at the top of every page (GITEA_CUSTOM is /data/gitea in
// the Gitea chart).
const (
	BannerMountPath = "/data/gitea/templates/custom/header.tmpl"
	BannerKey       = "header.tmpl"
	bannerVolume    = "profilekit-banner"
)

// BannerName returns the name of an instance's banner ConfigMap.
func BannerName(instance string) string { return "gitea-" + instance + "-banner" }

// cssColour is what a banner's colours may be: a name or a hex colour, so
// that nothing else reaches the style attribute.
var cssColour = regexp.MustCompile(`^(#[0-9a-fA-F]{3}|#[0-9a-fA-F]{6}|[a-zA-Z]{1,20})$`)

func (b *Banner) withDefaults() *Banner {
	if b == nil {
		return nil
	}
	out := *b
	if out.Background == "" {
		out.Background = "#ffffff"
	}
	if out.Foreground == "" {
		out.Foreground = "#000000"
	}
	return &out
}

func (b *Banner) validate() error {
	if b == nil {
		return nil
	}
	var errs []error
	if strings.TrimSpace(b.Text) == "" || len(b.Text) > 200 {
		errs = append(errs, fmt.Errorf("text %q: want 1 to 200 characters", b.Text))
	}
	for _, c := range []struct{ field, v string }{{"background", b.Background}, {"foreground", b.Foreground}} {
		if !cssColour.MatchString(c.v) {
			errs = append(errs, fmt.Errorf("%s %q: want a colour name, #rgb or #rrggbb", c.field, c.v))
		}
	}
	return errors.Join(errs...)
}

func (p Placement) validate() error {
	var errs []error
	for k, v := range p.NodeSelector {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s: %s", field.NewPath("nodeSelector").Key(k), strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s=%q: %s", field.NewPath("nodeSelector").Key(k), v, strings.Join(msgs, "; ")))
		}
	}
	for i, t := range p.Tolerations {
		at := field.NewPath("tolerations").Index(i)
		switch t.Operator {
		case "", corev1.TolerationOpEqual:
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, fmt.Errorf("%s: operator Exists takes no value", at))
			}
		default:
			errs = append(errs, fmt.Errorf("%s: operator %q: want Equal or Exists", at, t.Operator))
		}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, fmt.Errorf("%s: effect %q: want NoSchedule, PreferNoSchedule or NoExecute", at, t.Effect))
		}
		if t.Key != "" {
			if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s: key %q: %s", at, t.Key, strings.Join(msgs, "; ")))
			}
		}
	}
	return errors.Join(errs...)
}

// banner is the instance's banner ConfigMap in namespace ns: one line of
// HTML whose text is escaped.
func (in Instance) banner(ns string) *corev1ac.ConfigMapApplyConfiguration {
	b := in.Banner
	div := fmt.Sprintf(`<div class="profilekit-banner" style="background:%s;color:%s;text-align:center;font-weight:bold;padding:4px">%s</div>`,
		b.Background, b.Foreground, html.EscapeString(b.Text))
	return corev1ac.ConfigMap(BannerName(in.Name), ns).WithData(map[string]string{BannerKey: div + "\n"})
}

// placementValues are the chart values that place the pods and mount the
// banner; the host's own extra volumes stay, ours follow them.
func (in Instance) placementValues(host map[string]any) map[string]any {
	out := map[string]any{}
	if len(in.Placement.NodeSelector) > 0 {
		sel := map[string]any{}
		for k, v := range in.Placement.NodeSelector {
			sel[k] = v
		}
		out["nodeSelector"] = sel
	}
	if len(in.Placement.Tolerations) > 0 {
		out["tolerations"] = plainJSON(in.Placement.Tolerations)
	}
	if in.Banner != nil {
		vols, _ := host["extraVolumes"].([]any)
		mounts, _ := host["extraContainerVolumeMounts"].([]any)
		out["extraVolumes"] = append(append([]any{}, vols...), map[string]any{
			"name": bannerVolume, "configMap": map[string]any{"name": BannerName(in.Name)},
		})
		out["extraContainerVolumeMounts"] = append(append([]any{}, mounts...), map[string]any{
			"name": bannerVolume, "mountPath": BannerMountPath, "subPath": BannerKey, "readOnly": true,
		})
	}
	return out
}

// plainJSON turns v into the maps and slices JSON decodes to, the form of
// an Application's valuesObject.
func plainJSON(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(data, &out) != nil {
		return nil
	}
	return out
}
