package blobcsi

// This file holds the names of PersistentVolumes, which are cluster-wide:
// the check that a host's template gives no two namespaces' volumes one
// name, and the names that versions before DefaultPVName gave.

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// playEarlierVersion lets a test's host name volumes as versions before
// DefaultPVName did (legacyPVName), which validation refuses otherwise.
var playEarlierVersion bool

// injective returns an error naming two volumes of two namespaces that
// would share a PersistentVolume name under tmpl: PersistentVolumes are
// cluster-wide, so such a template lets one tenant's volume take the name
// of another's (a Conflict, by which one tenant can deny another a
// bucket). A template that lacks {{ .Namespace }} or {{ .Volume }}, or
// joins them with text that namespaces and volume names (DNS labels) may
// both hold, or with none, has such a pair; one that joins them with a
// character neither may hold, such as a dot, does not.
func injective(tmpl string) error {
	marked, err := render(tmpl, "\x00", "\x01")
	if err != nil {
		return nil // reported by the caller
	}
	ns, vol := strings.Index(marked, "\x00"), strings.Index(marked, "\x01")
	var pairs [][2][2]string // two (namespace, volume) pairs that may meet
	switch {
	case ns < 0:
		pairs = append(pairs, [2][2]string{{"a", "v"}, {"b", "v"}})
	case vol < 0:
		pairs = append(pairs, [2][2]string{{"a", "v"}, {"a", "w"}})
	case ns < vol:
		sep := marked[ns+1 : vol]
		pairs = append(pairs, [2][2]string{{"a", "b" + sep + "c"}, {"a" + sep + "b", "c"}})
	default:
		sep := marked[vol+1 : ns]
		pairs = append(pairs, [2][2]string{{"b" + sep + "c", "a"}, {"c", "a" + sep + "b"}})
	}
	for _, p := range pairs {
		if !labels(p[0][0], p[0][1], p[1][0], p[1][1]) {
			continue
		}
		a, _ := render(tmpl, p[0][0], p[0][1])
		b, _ := render(tmpl, p[1][0], p[1][1])
		if a == b {
			return fmt.Errorf("%q gives namespace %s's volume %s and namespace %s's volume %s the same name %q; join {{ .Namespace }} and {{ .Volume }} with a character neither holds, as the default %q does",
				tmpl, p[0][0], p[0][1], p[1][0], p[1][1], a, DefaultPVName)
		}
	}
	return nil
}

// labels reports whether every s is a DNS label.
func labels(s ...string) bool {
	for _, v := range s {
		if len(validation.IsDNS1123Label(v)) > 0 {
			return false
		}
	}
	return true
}

// legacyPVName is the PersistentVolume name template of versions before
// DefaultPVName.
const legacyPVName = "{{ .Namespace }}-{{ .Volume }}"

// keepBoundNames gives each volume, under the default name template, the
// name of the volume of ours its claim is bound to when that is the name
// versions before the default gave it: a bound volume keeps its name, and
// is never replaced under its pods for a rename.
func keepBoundNames(cfg *Config, ns string, vols []Volume, live liveState) {
	if cfg.Names.PersistentVolume != DefaultPVName {
		return
	}
	for i, v := range vols {
		pvc := live.pvcs[v.Claim]
		if pvc == nil || pvc.Spec.VolumeName == "" || live.pvs[pvc.Spec.VolumeName] == nil {
			continue
		}
		if legacy, err := render(legacyPVName, ns, v.Name); err == nil && pvc.Spec.VolumeName == legacy {
			vols[i].PV = legacy
		}
	}
}
