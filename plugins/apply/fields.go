package apply

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/profilekit/profilekit/plugins"
)

// Fields applies, as plugin kind through w, a partial configuration of an object that exists and
// that the plugin did not create, such as the PersistentVolume a provisioner
// made for one of the plugin's claims: the configuration holds the object's
// identity and only the fields the plugin owns on it, which the server then
// records under the plugin's field manager (forced, since the plugin's
// configuration decides their values). The apply carries uid, so the server
// refuses it when the object is gone or was made again since it was read:
// Fields never creates an object. Fields the plugin applied before and
// that ac no longer holds are removed by the server.
//
// Unlike the Applier's Sync it adds no ownership labels or owner reference, prunes nothing
// and does not compare with the live object: the caller decides whether a
// write is needed, from its own read.
func Fields(ctx context.Context, w client.Writer, kind string, uid types.UID, ac runtime.ApplyConfiguration) error {
	u, err := toUnstructured(ac)
	if err != nil {
		return fmt.Errorf("plugin %s: %w", kind, err)
	}
	if uid == "" {
		return fmt.Errorf("plugin %s: %s %s has no uid; fields are applied only to an object that was read", kind, u.GetKind(), u.GetName())
	}
	u.SetUID(uid)
	err = w.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(plugins.FieldManagerFor(kind)), client.ForceOwnership)
	if err != nil {
		return fmt.Errorf("apply fields of %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	log.FromContext(ctx).V(1).Info("applied fields", "kind", u.GetKind(), "namespace", u.GetNamespace(), "name", u.GetName())
	return nil
}
