package templates

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

// Plugin writes the objects of the templates each Profile gets into its
// namespace, and deletes the ones of ours it no longer gets.
type Plugin struct{}

var _ plugins.Plugin = Plugin{}

// Definition returns the templates plugin with its config. It owns no kind
// of its own: the kinds of the host's templates (and its retired kinds) are
// owned through OwnsFrom, and a host watches and prunes them.
func Definition() plugins.Definition {
	return plugins.Definition{
		Plugin:    Plugin{},
		NewConfig: func() any { return NewConfig() },
		OwnsFrom:  ownsFrom,
	}
}

// ownsFrom returns the kinds the host's config names (Config.Kinds).
func ownsFrom(hostConfig any) ([]schema.GroupVersionKind, error) {
	cfg, ok := hostConfig.(*Config)
	if !ok || cfg == nil {
		return nil, fmt.Errorf("config is %T, want *templates.Config", hostConfig)
	}
	return cfg.Kinds(), nil
}

// Kind returns "templates".
func (Plugin) Kind() string { return Kind }

// Apply writes the objects of the templates the Profile gets and prunes the
// rest of ours, but for those of templates that fail for the Profile: they
// stay as they are, and the failure is reported (see Plan).
func (Plugin) Apply(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	cfg, err := plugins.ConfigOf[Config](req)
	if err != nil {
		return plugins.Result{}, err
	}
	plan := Build(cfg, req.Profile, mapperOf(req.Client))
	for _, h := range plan.Held {
		req.Objects.Keep(h.GVK, plugins.Namespace(req.Profile), h.Name)
	}
	desired := make([]runtime.ApplyConfiguration, 0, len(plan.Objects))
	for _, o := range plan.Objects {
		desired = append(desired, apply.Encoded(o.Object.Object))
	}
	write := req.Objects.Sync
	if plan.HoldAll {
		write = req.Objects.Apply
	}
	res, err := write(ctx, desired...)
	return res, errors.Join(plan.Err, attribute(err, plan.Objects))
}

// Revoke deletes every object of ours for the Profile.
func (Plugin) Revoke(ctx context.Context, req plugins.Request) (plugins.Result, error) {
	return req.Objects.DeleteAll(ctx)
}

// mapperOf returns the REST mapper of c, nil when it has none.
func mapperOf(c plugins.Cluster) meta.RESTMapper {
	if m, ok := c.(interface{ RESTMapper() meta.RESTMapper }); ok {
		return m.RESTMapper()
	}
	return nil
}

// attribute names the template of each object err is about (the Applier
// names objects as "Kind namespace/name"), so that the condition says which
// template to mend. The API server refusing an object as invalid is the
// template's fault and terminal, like a template that does not render.
func attribute(err error, objs []Rendered) error {
	if err == nil {
		return nil
	}
	parts := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	out := make([]error, 0, len(parts))
	for _, e := range parts {
		t := templateOf(e, objs)
		switch {
		case t == "":
			out = append(out, e)
		case apierrors.IsInvalid(e):
			out = append(out, plugins.Terminal(plugins.ReasonInvalidConfig, fmt.Errorf("template %s: %w", t, e)))
		case plugins.IsTerminal(e):
			out = append(out, plugins.Terminal(plugins.ReasonOf(e, plugins.ReasonApplyFailed), fmt.Errorf("template %s: %w", t, e)))
		default:
			out = append(out, fmt.Errorf("template %s: %w", t, e))
		}
	}
	return errors.Join(out...)
}

// templateOf returns the template whose object err names, "" when none.
func templateOf(err error, objs []Rendered) string {
	msg := err.Error()
	for _, o := range objs {
		u := o.Object
		if strings.Contains(msg, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName()+" ") ||
			strings.Contains(msg, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName()+":") {
			return o.Template
		}
	}
	return ""
}
