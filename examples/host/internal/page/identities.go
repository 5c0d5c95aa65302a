package page

import (
	"encoding/json"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/azureidentity"
	"github.com/profilekit/profilekit/plugins/irsa"
	"github.com/profilekit/profilekit/plugins/workloadidentity"
)

// identityKeys are the annotations that give a ServiceAccount a cloud
// identity, the cloud each names, and the plugin that grants it.
var identityKeys = []struct{ key, cloud, kind string }{
	{irsa.AnnotationRoleARN, "AWS IAM role", irsa.Kind},
	{workloadidentity.AnnotationGSA, "Google service account", workloadidentity.Kind},
	{azureidentity.AnnotationClientID, "Azure client ID", azureidentity.Kind},
}

func (v *View) addIdentity(o client.Object) {
	for _, k := range identityKeys {
		val := o.GetAnnotations()[k.key]
		if val == "" {
			continue
		}
		id := Identity{ServiceAccount: o.GetName(), Cloud: k.cloud, Value: val}
		switch i := slices.IndexFunc(v.Plugins, func(p Plugin) bool { return p.Type == plugins.ConditionTypeFor(k.kind) }); {
		case !grantedBy(o, k.kind, k.key):
			// Anyone who may edit the namespace's ServiceAccounts may
			// annotate one: no grant stands behind that.
			id.NotReady = "set on this service account by hand, not granted by the platform"
		case i < 0:
			id.NotReady = "the platform has not reported on it yet"
		case v.Plugins[i].Status != plugins.ConditionTrue:
			id.NotReady = strings.TrimSpace(v.Plugins[i].Reason + " " + v.Plugins[i].Message)
		}
		v.Identities = append(v.Identities, id)
	}
}

// grantedBy reports whether plugin kind's field manager holds annotation
// key of o: whether the plugin wrote the value o holds (the host's cache
// keeps profilekit's managed-fields entries).
func grantedBy(o client.Object, kind, key string) bool {
	manager := plugins.FieldManagerFor(kind)
	for _, e := range o.GetManagedFields() {
		if e.Manager != manager || e.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata struct {
				Annotations map[string]json.RawMessage `json:"f:annotations"`
			} `json:"f:metadata"`
		}
		if json.Unmarshal(e.FieldsV1.Raw, &fields) == nil {
			if _, ok := fields.Metadata.Annotations["f:"+key]; ok {
				return true
			}
		}
	}
	return false
}
