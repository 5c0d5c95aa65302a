// Package serviceaccounts holds what the cloud identity plugins share about
// the Profile's workload service accounts, which the core plugin or the
// upstream controller makes: the watch that wakes a Profile when one of them
// appears or changes, their workload identity subjects, and the annotation
// keys the plugins own on them; and Federate and Defederate, the order in
// which a plugin grants, annotates and sweeps a Profile's identity.
package serviceaccounts

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

var gvk = corev1.SchemeGroupVersion.WithKind("ServiceAccount")

// Watch wakes the Profile of a service account's namespace (a Profile's
// namespace has its name) when the service account appears or changes. Only
// metadata is cached.
func Watch() plugins.Watch {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return plugins.Watch{
		Object: obj,
		Profiles: func(_ context.Context, o client.Object) []string {
			return []string{o.GetNamespace()}
		},
	}
}

// Subject is the subject of a service account's projected token:
// system:serviceaccount:<namespace>:<name>.
func Subject(namespace, name string) string {
	return fmt.Sprintf("system:serviceaccount:%s:%s", namespace, name)
}

// Object names one of the Profile's service accounts.
func Object(req plugins.Request, name string) plugins.Foreign {
	return plugins.Foreign{GVK: gvk, Namespace: plugins.Namespace(req.Profile), Name: name}
}

// Annotate puts want on each named service account of the Profile, owned by
// the plugin's field manager. Service accounts are handled one by one; the
// errors of all are joined. A missing one is a retried error that says who
// makes it.
func Annotate(ctx context.Context, req plugins.Request, names []string, want map[string]string) (plugins.Result, error) {
	var res plugins.Result
	var errs []error
	for _, n := range names {
		c, err := req.Objects.Annotate(ctx, req.WatchedReader(), Object(req, n), want)
		if c.Action != "" {
			res.Add(c)
		}
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// Unannotate gives up the plugin's annotation keys on each named service
// account of the Profile; other annotations stay.
func Unannotate(ctx context.Context, req plugins.Request, names []string, keys ...string) (plugins.Result, error) {
	var res plugins.Result
	var errs []error
	for _, n := range names {
		c, err := req.Objects.Unannotate(ctx, req.WatchedReader(), Object(req, n), keys...)
		if c.Action == plugins.Configured {
			res.Add(c)
		}
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}
