// Package admission is the validating admission webhook for Profiles that
// `profilekit run` serves when its configuration enables it.
//
// For every plugin the host runs and the Profile enables, the webhook does
// what offline rendering does (render.Renderer.Check): it decodes the host's
// defaults and the Profile's spec, and runs the plugin's Apply against a
// recording Applier, so that every check a plugin makes of its spec and of
// the Profile's override labels runs, and nothing is written. A Profile that a
// plugin refuses (a terminal InvalidSpec or InvalidLabel error) is denied with
// the message that plugin's condition would carry. Kinds the host does not run
// are allowed, with a warning, since the upstream controller ignores them too.
//
// A Profile that names a cloud identity the host's allowances do not give
// it (IdentityNotAllowed) is denied, and so is one that names an identity
// another Profile holds (a Conflict; see WithClaims). What only the cloud
// can answer (a tag an allowance asks of the identity) is allowed with a
// warning that says it was not checked.
//
// A Profile whose name is held for another owner (see outside.Tenures: the
// owner of an earlier, deleted Profile of the name) is denied on CREATE, and
// on an UPDATE that changes spec.owner, with the message its plugins'
// conditions would carry and how an administrator hands the name over.
//
// An UPDATE is judged by what it changes: one that leaves the plugin specs
// and the labels as they were is allowed at once, and a plugin's refusal
// denies an UPDATE only when the old Profile did not already draw the same
// refusal. A Profile that a new host configuration made invalid can so still
// be edited (its owner, its other plugins) and deleted.
package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/render"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/outside"
)

// Validator decides on Profiles. It is safe for concurrent use.
type Validator struct {
	cfg      *hostconfig.Config
	renderer *render.Renderer
	tenures  *outside.Tenures
}

// Option configures a Validator.
type Option func(*Validator)

// WithTenures makes the Validator refuse a Profile whose name is held for
// another owner (outside.Tenures.Check): on CREATE, and on an UPDATE that
// changes spec.owner. The host refuses such a Profile's plugins with
// outside state whether or not the webhook runs; the webhook says so before
// the Profile is stored, where Kubeflow's registration shows it.
func WithTenures(t outside.Tenures) Option {
	return func(v *Validator) { v.tenures = &t }
}

// WithClaims makes the Validator refuse a Profile that names a piece of
// shared outside state (a cloud identity) another Profile holds: the
// claims and records in namespace, the host's records namespace, are read
// through r as the host reads them (outside.Outside.Claim), and never
// written. The host refuses such a Profile's plugin whether or not the
// webhook runs; the webhook says so before the Profile is stored.
func WithClaims(r client.Reader, namespace string) Option {
	return func(v *Validator) { v.renderer.WithClaims(r, namespace) }
}

var _ admission.Handler = (*Validator)(nil)

// New returns a Validator for the plugins in reg as cfg runs them; scheme
// holds the kinds the plugins read offline.
func New(cfg *hostconfig.Config, reg *plugins.Registry, scheme *runtime.Scheme, opts ...Option) *Validator {
	v := &Validator{cfg: cfg, renderer: render.New(cfg, reg, scheme)}
	for _, opt := range opts {
		opt(v)
	}
	return v
}

// Webhook returns the Validator as an HTTP handler for the webhook server.
func (v *Validator) Webhook() *admission.Webhook {
	return &admission.Webhook{Handler: v}
}

// Handle decides on one admission request for a Profile.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Kind.Group != kubeflowv1.GroupVersion.Group || req.Kind.Kind != "Profile" {
		return admission.Allowed("not a Profile")
	}
	switch req.Operation {
	case admissionv1.Create, admissionv1.Update:
	default:
		return admission.Allowed("")
	}
	p, err := decode(req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var old *kubeflowv1.Profile
	if req.Operation == admissionv1.Update {
		if old, err = decode(req.OldObject.Raw); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
	}
	if old != nil && sameInputs(old, p) && outside.OwnerKey(old) == outside.OwnerKey(p) {
		return admission.Allowed("plugin specs, labels and owner unchanged")
	}
	denied, warnings := v.Decide(ctx, old, p)
	if len(denied) > 0 {
		return admission.Denied(strings.Join(denied, "\n")).WithWarnings(warnings...)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

// Decide returns why p is refused (the name's tenure held for another
// owner, or one line per refusing plugin, the condition's type and message;
// none when it is admitted) and the warnings
// for its author. old is the Profile before an UPDATE, nil for a CREATE: a
// refusal that old drew already does not count against the UPDATE.
func (v *Validator) Decide(ctx context.Context, old, p *kubeflowv1.Profile) (denied, warnings []string) {
	refusal, warnings := v.heldElsewhere(ctx, old, p)
	if refusal != "" {
		return []string{refusal}, warnings
	}
	outcomes, _ := v.renderer.Check(ctx, p)
	var before map[string]string
	for _, o := range outcomes {
		for _, u := range o.Unchecked {
			warnings = append(warnings, fmt.Sprintf("%s: %s", o.Condition, u))
		}
		switch {
		case o.Err == nil:
			continue
		case !o.Refused():
			// Not the Profile's fault, nor something admission should block.
			warnings = append(warnings, fmt.Sprintf("%s: not checked: %s", o.Condition, plugins.BoundMessage(o.Err.Error())))
			continue
		}
		msg := o.Message()
		if old != nil {
			if before == nil {
				before = v.refusals(ctx, old)
			}
			if before[o.Kind] == msg {
				warnings = append(warnings, o.Condition+" stays False; this change does not alter why")
				continue
			}
		}
		denied = append(denied, msg)
	}
	if v.cfg.Webhook.WarnsUnknownPlugins() {
		for i, e := range p.Spec.Plugins {
			if _, on := v.cfg.Section(e.Kind); !on {
				warnings = append(warnings, fmt.Sprintf("%s: this host runs no such plugin; it is ignored", plugins.EntryPath(i, e.Kind)))
			}
		}
	}
	return denied, warnings
}

// heldElsewhere returns why p is refused when another owner holds its name
// and it is created or its owner changes, or a warning when the tenure
// could not be read: that is no reason to refuse, since the host checks it
// again before any plugin with outside state runs.
func (v *Validator) heldElsewhere(ctx context.Context, old, p *kubeflowv1.Profile) (refusal string, warnings []string) {
	if v.tenures == nil || old != nil && outside.OwnerKey(old) == outside.OwnerKey(p) {
		return "", nil
	}
	err := v.tenures.Check(ctx, p)
	var te *outside.TenureError
	switch {
	case errors.As(err, &te):
		return plugins.FailureMessage(err, plugins.ReasonConflict), nil
	case err != nil:
		return "", []string{"the tenure of the name was not checked: " + plugins.BoundMessage(err.Error())}
	}
	return "", nil
}

// refusals returns the message of every plugin that refuses p, by kind.
func (v *Validator) refusals(ctx context.Context, p *kubeflowv1.Profile) map[string]string {
	outcomes, _ := v.renderer.Check(ctx, p)
	out := map[string]string{}
	for _, o := range outcomes {
		if o.Refused() {
			out[o.Kind] = o.Message()
		}
	}
	return out
}

// sameInputs reports whether an UPDATE leaves everything a plugin reads from
// a Profile's author as it was: the plugin entries and the labels.
func sameInputs(old, p *kubeflowv1.Profile) bool {
	return maps.Equal(old.Labels, p.Labels) &&
		slices.EqualFunc(old.Spec.Plugins, p.Spec.Plugins, func(a, b kubeflowv1.Plugin) bool {
			return a.Kind == b.Kind && a.APIVersion == b.APIVersion && equality.Semantic.DeepEqual(a.Spec, b.Spec)
		})
}

// decode reads a Profile of either served version; both have the same fields.
func decode(raw []byte) (*kubeflowv1.Profile, error) {
	var p kubeflowv1.Profile
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("decode Profile: %w", err)
	}
	if !render.IsProfile(p.APIVersion, p.Kind) {
		return nil, fmt.Errorf("decode Profile: unexpected apiVersion %q, kind %q", p.APIVersion, p.Kind)
	}
	p.APIVersion = kubeflowv1.GroupVersion.String()
	return &p, nil
}
