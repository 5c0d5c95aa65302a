package gitea

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
	"github.com/profilekit/profilekit/plugins/apps"
	"github.com/profilekit/profilekit/plugins/egress"
)

// SystemPostgreSQL names PostgreSQL among outside systems.
const SystemPostgreSQL = "PostgreSQL"

// ReasonPasswordLost was the condition reason when a role existed but the
// Secret with its password was gone.
//
// Deprecated: the host keeps every role's password and writes the Secret
// from it (see HeldSecretName); a lost Secret is written again.
const ReasonPasswordLost = "PasswordLost"

// OfflinePassword stands for a password in offline rendering, which never
// generates one.
const OfflinePassword = "<generated on first apply>"

// Owns lists the kinds the plugin writes.
var Owns = append([]schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("Secret"),
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	egress.ServiceEntryKind,
}, apps.Owns...)

// Plugin provisions a Gitea per Profile and instance: a PostgreSQL role and
// database, the database Secret, the Argo CD Application, the route, the
// NetworkPolicy and, for an external database, a ServiceEntry.
type Plugin struct {
	// Tracer, when set, sees every SQL statement (tests count them).
	Tracer pgx.QueryTracer
}

var _ plugins.Plugin = Plugin{}

// Definition returns the gitea plugin.
func Definition() plugins.Definition { return Plugin{}.Definition() }

// Definition returns the plugin p with its config and owned kinds.
func (p Plugin) Definition() plugins.Definition {
	return plugins.Definition{
		Plugin:    p,
		NewConfig: func() any { return NewConfig() },
		Owns:      Owns,
		// The host reads the passwords it keeps whole; Applications as
		// apps reads them.
		Reads: append([]schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("Secret")}, apps.Reads...),
		// The database Secret is output, whole: one a tenant added fields
		// to is made again from the password the host keeps.
		Exclusive: []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("Secret")},
		// Databases and Applications live outside the Profile's namespace.
		OutsideState: true,
	}
}

// Kind returns "gitea".
func (Plugin) Kind() string { return Kind }

type work struct {
	in       Instance
	server   Server
	password string
}

// Apply provisions the instances the Profile wants. Each role's password
// is the host's (see heldPassword): the database Secret in the Profile's
// namespace is written from it every pass, so that a tenant's edit is put
// back, and never read, but to carry an existing install's password over
// once (firstPassword). An instance the Profile no longer wants loses its
// app; its database and Secret stay unless retention is Delete.
func (p Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, o, err := begin(req)
	if err != nil {
		return plugins.Result{}, err
	}
	ns := plugins.Namespace(req.Profile)
	acfg := cfg.appsConfig(req.Profile)
	kept, err := apps.KeptNames(ctx, req.Client, acfg, Kind, req.Profile)
	if err != nil {
		return plugins.Result{}, err
	}
	on, invalid, err := apps.Wanted(ctx, req.Client, acfg, req.Profile, kept)
	if err != nil {
		return plugins.Result{}, err
	}
	wanted := map[string]bool{}
	for _, a := range on {
		wanted[a.Name] = true
	}

	recorded, err := recordedSet(ctx, o, req.Retention)
	if err != nil {
		return plugins.Result{}, err
	}
	earlier, err := o.Predecessors(ctx)
	if err != nil {
		return plugins.Result{}, err
	}
	var res plugins.Result
	var objs []runtime.ApplyConfiguration
	var todo []work
	var errs []error
	for _, in := range cfg.instances() {
		spec := in.target(req.Profile, earlier)
		pw, err := heldPassword(ctx, req, in)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !wanted[AppName(in.Name)] {
			kept, err := p.letGo(ctx, req, o, in, spec, pw, recorded[stateKey(in)], &res)
			if err != nil {
				errs = append(errs, err)
			}
			if kept != nil {
				objs = append(objs, kept)
			}
			continue
		}
		w := work{in: in, password: pw}
		if !o.Offline() {
			if w.server, err = p.server(ctx, req.Client, in, false); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if pw == "" {
			if w.password, err = w.first(ctx, req, o, spec); err != nil {
				errs = append(errs, fmt.Errorf("instance %s: %w", in.Name, err))
				continue
			}
		}
		objs = append(objs, in.secret(ns, w.password))
		if in.Banner != nil {
			objs = append(objs, in.banner(ns))
		}
		if in.Database.serviceEntry(cfg.Routing.ClusterDomain) {
			objs = append(objs, apply.Encoded(in.serviceEntry(ns)))
		}
		todo = append(todo, w)
	}
	if len(errs) > 0 {
		// Nothing is written or deleted until every instance can be served.
		return res, errors.Join(append(errs, invalid...)...)
	}
	d, err := apps.Build(acfg, req.Profile, on, kept)
	if err != nil {
		return res, err
	}
	objs = append(objs, d.Objects()...)
	synced, err := req.Objects.Sync(ctx, objs...)
	res.Merge(synced)
	if err != nil {
		return res, errors.Join(append([]error{err}, invalid...)...)
	}
	for _, w := range todo {
		spec := w.in.target(req.Profile, earlier)
		desired := struct {
			Server   string       `json:"server"`
			Database DatabaseSpec `json:"database"`
			Password string       `json:"passwordSHA256"`
		}{w.in.Database.Host, spec, digest(w.password)}
		_, err := o.Ensure(ctx, SystemPostgreSQL, stateKey(w.in), desired, func(ctx context.Context) error {
			ch, err := w.server.Ensure(ctx, spec, w.password)
			res.Changes = append(res.Changes, ch...)
			return err
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("instance %s: %w", w.in.Name, err))
		}
	}
	return res, errors.Join(append(errs, invalid...)...)
}

// first returns the password the host is to keep for w's role, which it
// keeps none of yet, and keeps it (see firstPassword). Offline it decides
// and writes nothing.
func (w work) first(ctx context.Context, req plugins.Request, o plugins.Outside, spec DatabaseSpec) (string, error) {
	if o.Offline() {
		return OfflinePassword, nil
	}
	tenants, err := tenantPassword(ctx, req.Client, req.Profile, SecretName(w.in.Name))
	if err != nil {
		return "", err
	}
	pw, err := w.firstPassword(ctx, o, spec, tenants)
	if err != nil {
		return "", err
	}
	return holdPassword(ctx, req, w.in, pw)
}

// letGo lets go of instance in, which the Profile no longer runs: its
// database, role and Secret stay, unless retention is Delete; then its
// connections are terminated, database and role dropped, the record
// forgets them and the host lets go of the password. It returns the
// Secret to keep, if any. An instance of which the host keeps neither a
// password nor a record was never made for the Profile.
func (p Plugin) letGo(ctx context.Context, req plugins.Request, o plugins.Outside, in Instance, spec DatabaseSpec, pw string, recorded bool, res *plugins.Result) (runtime.ApplyConfiguration, error) {
	ns := plugins.Namespace(req.Profile)
	switch {
	case req.Retention != plugins.RetentionDelete && pw == "":
		// An earlier version's Secret, of a password the host does not
		// keep: left as it is, never read.
		req.Objects.Keep(corev1.SchemeGroupVersion.WithKind("Secret"), ns, SecretName(in.Name))
		return nil, nil
	case req.Retention != plugins.RetentionDelete:
		// The database stays, and so does its password.
		return in.secret(ns, pw), nil
	case pw == "" && !recorded:
		return nil, nil
	}
	srv, err := p.server(ctx, req.Client, in, o.Offline())
	if err != nil {
		return nil, err
	}
	if err := o.Call(ctx, SystemPostgreSQL, func(ctx context.Context) error {
		ch, err := srv.Drop(ctx, spec)
		res.Changes = append(res.Changes, ch...)
		return err
	}); err != nil {
		return nil, fmt.Errorf("instance %s: %w", in.Name, err)
	}
	if err := o.Forget(ctx, stateKey(in)); err != nil {
		return nil, err
	}
	if o.Offline() {
		return nil, nil
	}
	return nil, dropHeld(ctx, req, in)
}

// begin returns a pass's config and outside-state record.
func begin(req plugins.Request) (*Config, plugins.Outside, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return nil, nil, err
	}
	if req.Outside == nil {
		return nil, nil, fmt.Errorf("plugin %s: the host gave no outside-state record", Kind)
	}
	return cfg, req.Outside, nil
}

// target is the instance's role and database for Profile p, with the
// proof they carry, and the proofs of p's owner's earlier Profiles of the
// name (the UIDs earlier gives).
func (in Instance) target(p *kubeflowv1.Profile, earlier []string) DatabaseSpec {
	spec := in.Spec(plugins.Namespace(p))
	spec.Profile, spec.Proof, spec.Adopt = p.Name, Proof(in.Name, p), in.Database.Adopt
	for _, uid := range earlier {
		before := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: p.Name, UID: types.UID(uid)}}
		spec.Earlier = append(spec.Earlier, Proof(in.Name, before))
	}
	return spec
}

func stateKey(in Instance) string { return "database/" + in.Name }

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// tenantPassword reads the password from our database Secret in the
// Profile's namespace, which its tenant can write: only firstPassword
// reads it, as a value to keep, never as a proof, and only while the host
// keeps no password for the role. A Secret of that name that is not ours
// is a conflict.
func tenantPassword(ctx context.Context, r client.Reader, p *kubeflowv1.Profile, name string) (string, error) {
	var s corev1.Secret
	err := r.Get(ctx, client.ObjectKey{Namespace: plugins.Namespace(p), Name: name}, &s)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read Secret %s/%s: %w", plugins.Namespace(p), name, err)
	}
	if !plugins.IsOwnedBy(s.Labels, Kind, p.Name) {
		return "", plugins.Terminalf(plugins.ReasonConflict, "Secret %s/%s exists and is not managed by plugin %s for profile %s; left untouched", s.Namespace, name, Kind, p.Name)
	}
	return string(s.Data[KeyPassword]), nil
}

// server returns the administrator's view of the instance's database
// server, reading the DSN and CA from their Secrets. Offline it reads
// nothing.
func (p Plugin) server(ctx context.Context, r client.Reader, in Instance, offline bool) (Server, error) {
	if offline {
		return Server{}, nil
	}
	dsn, err := secretValue(ctx, r, in.Database.AdminDSN)
	if err != nil {
		return Server{}, err
	}
	c := Connector{DSN: string(dsn), SSLMode: in.Database.SSLMode, Tracer: p.Tracer}
	if in.Database.SSLMode == SSLVerifyFull {
		if c.CA, err = secretValue(ctx, r, *in.Database.CA); err != nil {
			return Server{}, err
		}
	}
	return Server{Connector: c}, nil
}

// secretValue reads one key of a host Secret. A missing Secret or key is a
// retried error: the host may create it later.
func secretValue(ctx context.Context, r client.Reader, k SecretKey) ([]byte, error) {
	var s corev1.Secret
	err := r.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, &s)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("Secret %s/%s not found (it must carry the label %s=%s for the host to see it)", k.Namespace, k.Name, plugins.LabelManagedBy, plugins.ManagedByValue)
	}
	if err != nil {
		return nil, fmt.Errorf("read Secret %s/%s: %w", k.Namespace, k.Name, err)
	}
	v, ok := s.Data[k.Key]
	if !ok || len(v) == 0 {
		return nil, fmt.Errorf("Secret %s/%s has no key %q", k.Namespace, k.Name, k.Key)
	}
	return v, nil
}
