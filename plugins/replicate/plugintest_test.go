package replicate_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins/plugintest"
	"github.com/profilekit/profilekit/plugins/replicate"
)

// scenario is the replicate plugin with five sources in two namespaces of
// the platform: a CA bundle every Profile gets (one key, renamed), and four
// optIn ones: the shared registry's pull secret, the team registry's (a
// selector source whose object has the same name, so that its copy takes
// the shared one's place), the artifact store's credentials (a selector
// source with two objects) and a model cache's settings. The Profile first
// includes the shared registry and the artifact store, then moves to the
// team registry and the model cache: the pull secret's copy is rewritten
// with other data and annotations, the model cache's is added and both
// artifact-store copies are deleted, while the CA bundle stays. Then the
// plugin is removed.
//
// Setup makes the sources once, in namespaces of their own that every run
// shares; the plugin only reads them.
func scenario(t *testing.T) plugintest.Scenario {
	platform, team := "platform-"+rand.String(5), "team-"+rand.String(5)
	pull := func(registry string) map[string]string {
		return map[string]string{corev1.DockerConfigJsonKey: `{"auths":{"` + registry + `":{"auth":"` + secretValue() + `"}}}`}
	}
	sources := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: platform, Name: "corporate-ca"},
			Data: map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", "README": "not copied"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: platform, Name: "registry-pull"},
			Type: corev1.SecretTypeDockerConfigJson, StringData: pull("registry.example.org")},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "registry-pull", Labels: map[string]string{"replicate.example.org/team-registry": "true"}},
			Type: corev1.SecretTypeDockerConfigJson, StringData: pull("team.registry.example.org")},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: platform, Name: "minio", Labels: map[string]string{"replicate.example.org/artifact-store": "true"}},
			StringData: map[string]string{"accesskey": "minio", "secretkey": secretValue()}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: platform, Name: "s3", Labels: map[string]string{"replicate.example.org/artifact-store": "true"}},
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE", "AWS_SECRET_ACCESS_KEY": secretValue()}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: platform, Name: "model-cache"},
			Data: map[string]string{"HF_ENDPOINT": "https://models.example.org"}},
	}
	defaults, err := json.Marshal(replicate.Config{Sources: []replicate.Source{
		{ID: "ca-bundle", Kind: replicate.KindConfigMap, Namespace: platform, Name: "corporate-ca", CopyName: "ca-bundle",
			Keys: []replicate.Key{{Key: "ca.crt", As: "ca-bundle.crt"}}},
		{ID: "registry-pull", Kind: replicate.KindSecret, Namespace: platform, Name: "registry-pull", OptIn: true},
		{ID: "team-registry", Kind: replicate.KindSecret, Namespace: team, OptIn: true,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"replicate.example.org/team-registry": "true"}}},
		{ID: "artifact-store", Kind: replicate.KindSecret, Namespace: platform, OptIn: true, CopyPrefix: "artifacts-",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"replicate.example.org/artifact-store": "true"}}},
		{ID: "model-cache", Kind: replicate.KindConfigMap, Namespace: platform, Name: "model-cache", OptIn: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return plugintest.Scenario{
		Def:      replicate.Definition(),
		Defaults: defaults,
		Steps: []plugintest.Step{
			{Name: "create", Spec: map[string]any{"include": []string{"registry-pull", "artifact-store"}}},
			{Name: "move to the team registry and the model cache", Spec: map[string]any{"include": []string{"team-registry", "model-cache"}}},
			{Name: "remove", Remove: true},
			{Name: "add again", Spec: map[string]any{"include": []string{"registry-pull", "artifact-store"}}},
			{Name: "delete the Profile", Delete: true},
		},
		Setup: func(ctx context.Context, c client.Client, _ string) error {
			var errs []error
			for _, ns := range []string{platform, team} {
				errs = append(errs, client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))
			}
			for _, o := range sources {
				if err := c.Create(ctx, o.DeepCopyObject().(client.Object)); !apierrors.IsAlreadyExists(err) {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		},
	}
}

// TestSurvivesEveryPerturbation runs every crash, stale and unobserved
// plan of the scenario; the plugin calls no outside system.
func TestSurvivesEveryPerturbation(t *testing.T) {
	sc := scenario(t) // once: its sources and policies serve every pattern
	plugintest.Harness{Client: env.Client}.Survives(t, func(*testing.T) plugintest.Scenario { return sc }, plugintest.ClusterPatterns...)
}
