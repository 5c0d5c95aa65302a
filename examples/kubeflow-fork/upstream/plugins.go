// Package upstream stands in for the upstream Kubeflow profile controller's
// controllers package, with exactly its plugin shapes: the Plugin interface,
// a ProfileReconciler that embeds client.Client beside a Scheme field (which
// hides the client's Scheme method), and plugin selection by a switch on kind
// followed by json.Unmarshal of the spec into the plugin.
//
// The lines marked "fork:" are the ones a fork adds to use profilekit.
package upstream

import (
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/examples/kubeflow-fork/upstream/profilev1"
	"github.com/profilekit/profilekit/plugins/azureidentity"    // fork
	"github.com/profilekit/profilekit/plugins/irsa"             // fork
	"github.com/profilekit/profilekit/plugins/limitrange"       // fork: the plugins it wants
	"github.com/profilekit/profilekit/plugins/quotas"           // fork
	"github.com/profilekit/profilekit/plugins/workloadidentity" // fork
	"github.com/profilekit/profilekit/reconcilers"              // fork
)

// Plugin is upstream's plugin interface.
type Plugin interface {
	// ApplyPlugin is called when the Profile is created or updated.
	ApplyPlugin(*ProfileReconciler, *profilev1.Profile) error
	// RevokePlugin is called when the Profile is deleted.
	RevokePlugin(*ProfileReconciler, *profilev1.Profile) error
}

// ProfileReconciler has upstream's fields.
type ProfileReconciler struct {
	client.Client
	Scheme                     *runtime.Scheme
	Log                        logr.Logger
	UserIdHeader               string
	UserIdPrefix               string
	WorkloadIdentity           string
	DefaultNamespaceLabelsPath string

	// fork: the cloud IAM clients of the identity plugins, such as
	// irsa.DefaultIAM(); tests put mocks here.
	AWSIAM           irsa.IAM
	GCPIAM           workloadidentity.IAM
	AzureCredentials azureidentity.Credentials
	// fork: host defaults of the Azure plugin (the cluster's OIDC issuer).
	AzureDefaults []byte

	// Passes counts reconciles, as upstream's request counter metric does.
	Passes atomic.Int64
}

// fork: profilekit's adapter, instantiated with the fork's own types.
type profilekitPlugin = reconcilers.Adapter[*ProfileReconciler, *profilev1.Profile]

var _ Plugin = (*profilekitPlugin)(nil) // fork: checked by the compiler

// GetPluginSpec picks a plugin per spec.plugins entry, as upstream does.
func (r *ProfileReconciler) GetPluginSpec(profile *profilev1.Profile) ([]Plugin, error) {
	var out []Plugin
	for _, p := range profile.Spec.Plugins {
		var plugin Plugin
		switch p.Kind {
		case quotas.Kind: // fork
			plugin = reconcilers.NewAdapter[*ProfileReconciler, *profilev1.Profile](quotas.Definition())
		case limitrange.Kind: // fork
			plugin = reconcilers.NewAdapter[*ProfileReconciler, *profilev1.Profile](limitrange.Definition())
		case workloadidentity.Kind: // fork: upstream's kind and spec, unchanged
			var opts []reconcilers.AdapterOption
			if r.WorkloadIdentity != "" {
				// Upstream's -workload-identity flag becomes the host default.
				defaults, _ := json.Marshal(map[string]string{"gcpServiceAccount": r.WorkloadIdentity})
				opts = append(opts, reconcilers.AdapterDefaults(defaults))
			}
			plugin = reconcilers.NewAdapter[*ProfileReconciler, *profilev1.Profile](workloadidentity.Definition(r.GCPIAM), opts...)
		case irsa.Kind: // fork: upstream's kind and spec, unchanged
			plugin = reconcilers.NewAdapter[*ProfileReconciler, *profilev1.Profile](irsa.Definition(r.AWSIAM))
		case azureidentity.Kind: // fork
			plugin = reconcilers.NewAdapter[*ProfileReconciler, *profilev1.Profile](azureidentity.Definition(r.AzureCredentials),
				reconcilers.AdapterDefaults(r.AzureDefaults))
		default:
			r.Log.Info("unknown plugin kind", "kind", p.Kind)
			continue
		}
		if p.Spec != nil {
			if err := json.Unmarshal(p.Spec.Raw, plugin); err != nil {
				return nil, fmt.Errorf("plugin %s: %w", p.Kind, err)
			}
		}
		out = append(out, plugin)
	}
	return out, nil
}
