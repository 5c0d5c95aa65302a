package opa

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// ConfigMapSource is a Source that reads grants from one ConfigMap, watched:
// every key holds a JSON list of buckets (the list shape of Decode), and the
// grants are all keys' buckets together. A ConfigMap that is deleted or
// whose keys do not decode keeps the last good snapshot.
type ConfigMapSource struct {
	tracker
	client          kubernetes.Interface
	namespace, name string
}

var _ Source = (*ConfigMapSource)(nil)

// NewConfigMapSource returns a source named name that watches the ConfigMap
// namespace/configMap through c. Options.Interval is not used.
func NewConfigMapSource(name string, c kubernetes.Interface, namespace, configMap string, opts Options) (*ConfigMapSource, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("grants source %s: %w", name, err)
	}
	if c == nil || namespace == "" || configMap == "" {
		return nil, fmt.Errorf("grants source %s: needs a client, a namespace and a ConfigMap name", name)
	}
	return &ConfigMapSource{tracker: newTracker(name, o), client: c, namespace: namespace, name: configMap}, nil
}

// DecodeConfigMap reads the grants of a ConfigMap's data: each key a JSON
// list of buckets. Errors name the key.
func DecodeConfigMap(data map[string]string) (Grants, error) {
	var all []Bucket
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(data)) {
		var buckets []Bucket
		if err := strict([]byte(data[k]), &buckets); err != nil {
			errs = append(errs, fmt.Errorf("key %s: %w", k, err))
			continue
		}
		if buckets == nil && data[k] != "[]" {
			errs = append(errs, fmt.Errorf("key %s: want a list of buckets", k))
			continue
		}
		all = append(all, buckets...)
	}
	if err := errors.Join(errs...); err != nil {
		return Grants{}, fmt.Errorf("grants: %w", err)
	}
	g, err := NewGrants(all)
	if err != nil {
		return Grants{}, fmt.Errorf("grants: %w", err)
	}
	return g, nil
}

// take reads one version of the ConfigMap (nil when it is gone).
func (s *ConfigMapSource) take(ctx context.Context, cm *corev1.ConfigMap) []string {
	if cm == nil {
		return s.offer(ctx, Grants{}, &RefreshError{Source: s.Name(), Reason: ReasonMissing,
			Err: fmt.Errorf("ConfigMap %s/%s does not exist", s.namespace, s.name)})
	}
	g, err := DecodeConfigMap(cm.Data)
	if err != nil {
		return s.offer(ctx, Grants{}, &RefreshError{Source: s.Name(), Reason: ReasonMalformed,
			Err: fmt.Errorf("ConfigMap %s/%s: %w", s.namespace, s.name, err)})
	}
	return s.offer(ctx, g, nil)
}

// Run watches the ConfigMap until ctx ends. Only that one ConfigMap is
// listed and watched (by a field selector), never the namespace's others.
func (s *ConfigMapSource) Run(ctx context.Context, notify func([]string)) error {
	lw := cache.NewFilteredListWatchFromClient(s.client.CoreV1().RESTClient(), "configmaps", s.namespace,
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.name).String()
		})
	events := make(chan *corev1.ConfigMap, 1)
	send := func(cm *corev1.ConfigMap) {
		// Only the latest version matters: replace a pending one.
		select {
		case <-events:
		default:
		}
		events <- cm
	}
	_, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &corev1.ConfigMap{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { send(asConfigMap(o)) },
			UpdateFunc: func(_, o any) { send(asConfigMap(o)) },
			DeleteFunc: func(any) { send(nil) },
		},
	})
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil
	}
	// A ConfigMap that does not exist at the start is reported as missing.
	if len(events) == 0 {
		send(nil)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case cm := <-events:
			if ns := s.take(ctx, cm); len(ns) > 0 {
				notify(ns)
			}
		}
	}
}

func asConfigMap(o any) *corev1.ConfigMap {
	cm, _ := o.(*corev1.ConfigMap)
	return cm
}
