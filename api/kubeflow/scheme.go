// Package kubeflow registers every version of the Profile API with a scheme:
//
//	scheme := runtime.NewScheme()
//	err := errors.Join(clientgoscheme.AddToScheme(scheme), kubeflow.AddToScheme(scheme))
//
// # Stability
//
// Stable under semver: AddToScheme, and v1 as the preferred version.
package kubeflow

import (
	"errors"

	"k8s.io/apimachinery/pkg/runtime"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	kubeflowv1beta1 "github.com/profilekit/profilekit/api/kubeflow/v1beta1"
)

// AddToScheme adds the v1 and v1beta1 Profile types to s, v1 first so that it is
// the preferred version.
func AddToScheme(s *runtime.Scheme) error {
	return errors.Join(kubeflowv1.AddToScheme(s), kubeflowv1beta1.AddToScheme(s))
}
