package upstream

import (
	"errors"
	"fmt"

	istiosecurityv1beta1 "istio.io/client-go/pkg/apis/security/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/profilekit/profilekit/examples/kubeflow-fork/upstream/profilev1"
	"github.com/profilekit/profilekit/reconcilers"
)

// NewScheme returns the scheme of upstream's main: the built-in kinds, its
// own Profile type and Istio's security kinds.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	return s, errors.Join(clientgoscheme.AddToScheme(s), profilev1.AddToScheme(s), istiosecurityv1beta1.AddToScheme(s))
}

// NewManager makes the manager as upstream's main does, with opts (the
// caller's: addresses, leader election), upstream's scheme, and the fork's
// cache options. Unless opts name a mapper, it maps kinds to resources with
// reconcilers.NewRESTMapper, as the standalone host does: the plugins' writes
// map a kind on every request.
func NewManager(cfg *rest.Config, opts ctrl.Options) (ctrl.Manager, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	profilekit, err := (&ProfileReconciler{}).NewProfilekit()
	if err != nil {
		return nil, fmt.Errorf("profilekit plugins: %w", err)
	}
	profilekitCache, err := reconcilers.ForkCacheOptions(cache.Options{Scheme: scheme}, nil, profilekit.Definitions()...)
	if err != nil {
		return nil, err
	}
	opts.Scheme, opts.Cache = scheme, profilekitCache
	if opts.MapperProvider == nil {
		opts.MapperProvider = reconcilers.NewRESTMapper
	}
	return ctrl.NewManager(cfg, opts)
}
