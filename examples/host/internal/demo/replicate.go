package demo

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/replicate"
)

// replicateConfig returns the replicate plugin's host config when the demo
// runs it.
func (d *demo) replicateConfig() (*replicate.Config, bool) {
	def, ok := d.def(replicate.Kind)
	if !ok {
		return nil, false
	}
	sec, _ := d.Config.Section(replicate.Kind)
	cfg, err := def.DecodeHostDefaults(sec.Defaults)
	if err != nil {
		return nil, false
	}
	c, ok := cfg.(*replicate.Config)
	return c, ok
}

// createSources creates, before any Profile, the objects the replicate
// plugin's name sources point at, as a platform team would, under title
// when it is not empty. Secret values are made up and never printed.
func (d *demo) createSources(ctx context.Context, title string) error {
	cfg, ok := d.replicateConfig()
	if !ok || len(cfg.Sources) == 0 {
		return nil
	}
	if title != "" {
		d.title(title)
	}
	for _, s := range cfg.Sources {
		if s.Name == "" {
			continue
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.Namespace}}
		if err := d.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", s.Namespace, err)
		}
		obj := sourceObject(s, 1)
		if err := d.c.Create(ctx, obj); err != nil {
			return fmt.Errorf("create %s %s/%s: %w", s.Kind, s.Namespace, s.Name, err)
		}
		d.printf("created %s %s/%s (source %s)\n", s.Kind, s.Namespace, s.Name, s.ID)
	}
	return nil
}

// sourceObject returns a made-up source for s; version changes its value.
func sourceObject(s replicate.Source, version int) client.Object {
	meta := metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name}
	if s.Kind == replicate.KindConfigMap {
		data := map[string]string{}
		for _, k := range keysOrDefault(s, "ca.crt") {
			data[k] = fmt.Sprintf("demo value %d of %s", version, k)
		}
		return &corev1.ConfigMap{ObjectMeta: meta, Data: data}
	}
	auth := fmt.Sprintf(`{"auths":{"registry.example.org":{"auth":"ZGVtbzpyb3RhdGlvbi0%d"}}}`, version)
	return &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(auth)}}
}

func keysOrDefault(s replicate.Source, def string) []string {
	if len(s.Keys) == 0 {
		return []string{def}
	}
	var out []string
	for _, k := range s.Keys {
		out = append(out, k.Key)
	}
	return out
}

// rotateSource rotates the first Secret name source and times how long its
// copies in every Profile that gets it take to follow.
func (d *demo) rotateSource(ctx context.Context, profiles []*kubeflowv1.Profile) error {
	cfg, ok := d.replicateConfig()
	if !ok {
		return nil
	}
	i := slices.IndexFunc(cfg.Sources, func(s replicate.Source) bool { return s.Kind == replicate.KindSecret && s.Name != "" })
	if i < 0 {
		return nil
	}
	s := cfg.Sources[i]
	var copies []client.ObjectKey
	for _, p := range profiles {
		live, err := d.get(ctx, p.Name)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(d.applying(live), func(def plugins.Definition) bool { return def.Kind() == replicate.Kind }) {
			continue
		}
		pc, err := d.profileReplicate(live)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(pc.For(live), func(x *replicate.Source) bool { return x.ID == s.ID }) {
			name := s.CopyName
			if name == "" {
				name = s.Name
			}
			copies = append(copies, client.ObjectKey{Namespace: plugins.Namespace(live), Name: name})
		}
	}
	if len(copies) == 0 {
		return nil
	}
	d.title("Rotate a replicated Secret")
	want := sourceObject(s, 2).(*corev1.Secret)
	d.printf("rotate %s %s/%s (source %s); copies in %d Profiles follow\n", s.Kind, s.Namespace, s.Name, s.ID, len(copies))
	start := time.Now()
	if err := d.c.Update(ctx, want); err != nil {
		return fmt.Errorf("rotate %s/%s: %w", s.Namespace, s.Name, err)
	}
	err := d.eventually(ctx, "rotated copies", func(ctx context.Context) (bool, string, error) {
		for _, k := range copies {
			var c corev1.Secret
			if err := d.c.Get(ctx, k, &c); err != nil {
				return false, k.String() + ": " + err.Error(), nil
			}
			if string(c.Data[corev1.DockerConfigJsonKey]) != string(want.Data[corev1.DockerConfigJsonKey]) {
				return false, k.String() + " not yet rotated", nil
			}
		}
		return true, "", nil
	})
	if err != nil {
		return err
	}
	d.printf("  -> every copy holds the new value %s after the change (values are never printed; keys and sizes only):\n", time.Since(start).Round(time.Millisecond))
	for _, k := range copies {
		var c corev1.Secret
		if err := d.c.Get(ctx, k, &c); err != nil {
			return err
		}
		d.printf("  Secret %s  %s\n", k, secretSummary(&c))
	}
	return nil
}

// profileReplicate decodes the replicate config a Profile gets.
func (d *demo) profileReplicate(p *kubeflowv1.Profile) (*replicate.Config, error) {
	def, _ := d.def(replicate.Kind)
	sec, _ := d.Config.Section(replicate.Kind)
	cfg, err := def.Decode(sec.Defaults, p)
	if err != nil {
		return nil, err
	}
	return cfg.(*replicate.Config), nil
}

// secretSummary names a Secret's type and keys with their sizes.
func secretSummary(s *corev1.Secret) string {
	keys := make([]string, 0, len(s.Data))
	for k := range s.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := "type " + string(s.Type) + ", keys"
	for _, k := range keys {
		out += fmt.Sprintf(" %s (%d bytes)", k, len(s.Data[k]))
	}
	return out
}
