package outside

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// RoleTenure is the LabelRole value of a tenure record (see Tenures).
const RoleTenure = "tenure"

// FieldManagerTenure writes tenure records.
const FieldManagerTenure = plugins.FieldManagerPrefix + "tenure"

// tenureData keys of a tenure record.
const (
	tenureOwner = "owner" // OwnerKey of the holder
	tenureUID   = "uid"   // the UID of the holder's latest Profile of the name
	tenureUIDs  = "uids"  // the UIDs of the holder's Profiles of the name, oldest first
)

// MaxTenureUIDs is how many of the holder's Profiles of a name a tenure
// remembers (see Outside.Predecessors): the latest ones.
const MaxTenureUIDs = 32

// TenureName returns the name of the ConfigMap, in the records' namespace,
// that says which owner holds the Profile name profile. Profile names are
// DNS labels, so the name is one to one with the Profile's.
func TenureName(profile string) string { return "profilekit-tenure-" + profile }

// OwnerKey returns what a tenure record keeps of a Profile's spec.owner: a
// hash of its kind, namespace and name (the API group is left out: clients
// write User and Group owners with and without it). Records so hold no
// owner's identity.
func OwnerKey(p *kubeflowv1.Profile) string {
	o := p.Spec.Owner
	sum := sha256.Sum256([]byte(o.Kind + "\x00" + o.Namespace + "\x00" + o.Name))
	return hex.EncodeToString(sum[:])
}

// TenureError says that the Profile's name is held for another owner: the
// owner of an earlier Profile of the name, or the owner a Profile had
// before its spec.owner changed. It never names that owner or Profile.
type TenureError struct {
	// Profile is the name held.
	Profile string
	// Record is the tenure record an administrator deletes to hand the
	// name over.
	Record types.NamespacedName
	// Held is true when this very Profile (by UID) held the name before its
	// owner changed: what was made under the name was made for it.
	Held bool
}

func (e *TenureError) Error() string {
	return fmt.Sprintf("the name %s is held for the owner of an earlier Profile of that name: nothing kept under a name passes to another owner, "+
		"so nothing is granted, mounted or trusted; an administrator hands it over: `profilekit tenure release %s`, or delete ConfigMap %s/%s",
		e.Profile, e.Profile, e.Record.Namespace, e.Record.Name)
}

// Tenures keeps which owner holds each Profile name, so that what outside-
// state plugins keep under a name (an identity templated on it, a grant
// naming the namespace, a database named after it) never passes to the
// next owner of the name. A tenure record is a ConfigMap of TenureName in
// the records' namespace, out of every tenant's reach, and owned by no
// Profile: it outlives the Profile. The same owner coming back holds the
// name again; only an administrator's Release hands it to another.
type Tenures struct {
	// Reader reads the records, usually through the host's cache.
	Reader client.Reader
	// Live, when set, confirms from the API server what the cache does
	// not show yet.
	Live client.Reader
	// Writer writes the records; nil for a Tenures that only checks.
	Writer client.Writer
	// Namespace holds the records; DefaultRecordsNamespace when empty.
	Namespace string
}

func (t Tenures) key(profile string) types.NamespacedName {
	ns := t.Namespace
	if ns == "" {
		ns = DefaultRecordsNamespace
	}
	return types.NamespacedName{Namespace: ns, Name: TenureName(profile)}
}

// get reads the record of name through r; nil when there is none.
func (t Tenures) get(ctx context.Context, r client.Reader, name string) (*corev1.ConfigMap, error) {
	var cm corev1.ConfigMap
	err := r.Get(ctx, t.key(name), &cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the tenure of the name %s: %w", name, err)
	}
	return &cm, nil
}

// lookup reads the record through the cache, and through Live when the
// cache has none or one of another owner (it may not show a release yet).
func (t Tenures) lookup(ctx context.Context, p *kubeflowv1.Profile) (*corev1.ConfigMap, error) {
	cm, err := t.get(ctx, t.Reader, p.Name)
	if err != nil || t.Live == nil || (cm != nil && cm.Data[tenureOwner] == OwnerKey(p)) {
		return cm, err
	}
	return t.get(ctx, t.Live, p.Name)
}

// Check returns a terminal Conflict wrapping a *TenureError when another
// owner holds p's name, and nil when p's owner holds it or no one does.
// It writes nothing: admission uses it.
func (t Tenures) Check(ctx context.Context, p *kubeflowv1.Profile) error {
	cm, err := t.lookup(ctx, p)
	if err != nil || cm == nil {
		return err
	}
	return t.judge(cm, p)
}

func (t Tenures) judge(cm *corev1.ConfigMap, p *kubeflowv1.Profile) error {
	if cm.Data[tenureOwner] == OwnerKey(p) {
		return nil
	}
	return plugins.Terminal(plugins.ReasonConflict, &TenureError{Profile: p.Name, Record: t.key(p.Name), Held: cm.Data[tenureUID] == string(p.UID)})
}

// Hold takes p's name for p's owner when no one holds it, and notes p as
// the holder's latest Profile when its owner holds it already; it returns
// Check's error when another owner holds it. A pass that finds its owner's
// record in the cache sends no request.
func (t Tenures) Hold(ctx context.Context, p *kubeflowv1.Profile) error {
	cm, err := t.lookup(ctx, p)
	if err != nil {
		return err
	}
	if cm == nil {
		return t.create(ctx, p)
	}
	if err := t.judge(cm, p); err != nil {
		return err
	}
	if cm.Data[tenureUID] == string(p.UID) {
		return nil
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data[tenureUID] = string(p.UID)
	cm.Data[tenureUIDs] = strings.Join(heldUIDs(cm, p.UID), " ")
	if err := t.Writer.Patch(ctx, cm, patch, client.FieldOwner(FieldManagerTenure)); err != nil {
		return fmt.Errorf("note Profile %s in the tenure of its name: %w", p.Name, err)
	}
	return nil
}

func (t Tenures) create(ctx context.Context, p *kubeflowv1.Profile) error {
	key := t.key(p.Name)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: map[string]string{
			plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelRole: RoleTenure, plugins.LabelProfile: p.Name}},
		Data: map[string]string{tenureOwner: OwnerKey(p), tenureUID: string(p.UID), tenureUIDs: string(p.UID)},
	}
	err := t.Writer.Create(ctx, cm, client.FieldOwner(FieldManagerTenure))
	if apierrors.IsAlreadyExists(err) {
		// Another pass took it in this moment: judge what it wrote.
		held, gerr := t.get(ctx, t.live(), p.Name)
		if gerr != nil || held == nil {
			return errors.Join(fmt.Errorf("tenure of the name %s: taken and gone again; trying again", p.Name), gerr)
		}
		return t.judge(held, p)
	}
	if err != nil {
		return fmt.Errorf("take the tenure of the name %s: %w", p.Name, err)
	}
	return nil
}

func (t Tenures) live() client.Reader {
	if t.Live != nil {
		return t.Live
	}
	return t.Reader
}

// Release deletes the tenure of the name profile, so that the next Profile
// of the name, of any owner, takes it: an administrator's hand-over. It
// reports whether there was one.
func (t Tenures) Release(ctx context.Context, profile string) (bool, error) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: t.key(profile).Name, Namespace: t.key(profile).Namespace}}
	err := t.Writer.Delete(ctx, cm)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("release the name %s: %w", profile, err)
	}
	return true, nil
}

// Seed takes the names of profiles that no record holds yet for their
// owners, reading the records through Reader: a host's first start writes
// one record per Profile, later starts none. Profiles whose name another
// owner holds are left as they are (their plugins report it). It returns
// how many it wrote.
func (t Tenures) Seed(ctx context.Context, profiles []kubeflowv1.Profile) (int, error) {
	var list corev1.ConfigMapList
	if err := t.Reader.List(ctx, &list, client.InNamespace(t.key("").Namespace),
		client.MatchingLabels{plugins.LabelManagedBy: plugins.ManagedByValue, plugins.LabelRole: RoleTenure}); err != nil {
		return 0, fmt.Errorf("list tenures: %w", err)
	}
	held := make(map[string]bool, len(list.Items))
	for _, cm := range list.Items {
		held[cm.Name] = true
	}
	wrote := 0
	var errs []error
	for i := range profiles {
		p := &profiles[i]
		if held[TenureName(p.Name)] {
			continue
		}
		err := t.create(ctx, p)
		var te *TenureError
		switch {
		case errors.As(err, &te):
		case err != nil:
			errs = append(errs, err)
		default:
			wrote++
		}
	}
	return wrote, errors.Join(errs...)
}

// heldUIDs returns the UIDs a tenure record holds, with uid last (added
// when missing), at most MaxTenureUIDs.
func heldUIDs(cm *corev1.ConfigMap, uid types.UID) []string {
	uids := strings.Fields(cm.Data[tenureUIDs])
	if len(uids) == 0 && cm.Data[tenureUID] != "" {
		uids = []string{cm.Data[tenureUID]}
	}
	uids = slices.DeleteFunc(uids, func(u string) bool { return u == string(uid) })
	uids = append(uids, string(uid))
	return uids[max(0, len(uids)-MaxTenureUIDs):]
}

// Predecessors returns the UIDs of the earlier Profiles of the Profile's
// name that its owner held, oldest first: what the plugin made for one of
// them (a proof that names its UID on a container or a database) is the
// Profile's, as the owner coming back gets it back. None when another owner
// holds the name, or offline.
func (o *Outside) Predecessors(ctx context.Context) ([]string, error) {
	if o.offline {
		return nil, nil
	}
	t := o.Tenures()
	cm, err := t.lookup(ctx, o.profile)
	if err != nil || cm == nil || cm.Data[tenureOwner] != OwnerKey(o.profile) {
		return nil, err
	}
	return slices.DeleteFunc(heldUIDs(cm, o.profile.UID), func(u string) bool { return u == string(o.profile.UID) }), nil
}

// Tenure takes or confirms the Profile's tenure of its name for its owner
// (Tenures.Hold, through the Outside's readers and writer, in its records'
// namespace). Hosts call it before a pass of a plugin with outside state;
// offline it does nothing.
func (o *Outside) Tenure(ctx context.Context) error {
	if o.offline {
		return nil
	}
	return o.Tenures().Hold(ctx, o.profile)
}

// Tenures returns the tenure records the Outside reads and writes.
func (o *Outside) Tenures() Tenures {
	return Tenures{Reader: o.reader, Live: o.live, Writer: o.writer, Namespace: o.recordNamespace()}
}
