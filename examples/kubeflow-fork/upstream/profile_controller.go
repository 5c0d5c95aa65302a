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
	// fork: the profilekit plugins (NewProfilekit); SetupWithManager
	// makes them when they are not set.
	Profilekit *Profilekit

	// Passes counts reconciles, as upstream's request counter metric does.
	Passes atomic.Int64
}

// Profilekit is the type of the fork's profilekit plugins, served as one
// upstream plugin (fork).
type Profilekit = reconcilers.Fork[*ProfileReconciler, *profilev1.Profile]

var _ Plugin = (*Profilekit)(nil) // fork: checked by the compiler

// NewProfilekit returns the profilekit plugins of the fork, with their host
// defaults (fork).
func (r *ProfileReconciler) NewProfilekit() (*Profilekit, error) {
	var wiDefaults []byte
	if r.WorkloadIdentity != "" {
		// Upstream's -workload-identity flag becomes the host default.
		wiDefaults, _ = json.Marshal(map[string]string{"gcpServiceAccount": r.WorkloadIdentity})
	}
	return reconcilers.NewFork(
		reconcilers.NewAdapter[*ProfileReconciler, *profilev1.Profile](quotas.Definition()),
		reconcilers.NewAdapter[*ProfileReconciler, *profilev1.Profile](limitrange.Definition()),
		reconcilers.NewAdapter[*ProfileReconciler, *profilev1.Profile](workloadidentity.Definition(r.GCPIAM), reconcilers.AdapterDefaults(wiDefaults)),
		reconcilers.NewAdapter[*ProfileReconciler, *profilev1.Profile](irsa.Definition(r.AWSIAM)),
		reconcilers.NewAdapter[*ProfileReconciler, *profilev1.Profile](azureidentity.Definition(r.AzureCredentials), reconcilers.AdapterDefaults(r.AzureDefaults)),
	)
}

// GetPluginSpec picks a plugin per spec.plugins entry, as upstream does, and
// adds the fork's profilekit plugins, which serve their own entries.
func (r *ProfileReconciler) GetPluginSpec(profile *profilev1.Profile) ([]Plugin, error) {
	var out []Plugin
	for _, p := range profile.Spec.Plugins {
		if r.Profilekit.Serves(p.Kind) { // fork: r.Profilekit, added below, serves the entry
			continue
		}
		plugin := ownPlugin(p.Kind)
		if plugin == nil {
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
	return append(out, r.Profilekit), nil // fork: was return out, nil
}

// ownPlugin returns a new plugin of upstream's own of kind, or nil, as
// upstream's switch on kind does. The stand-in has none of upstream's own:
// those are upstream's code.
func ownPlugin(string) Plugin { return nil }
