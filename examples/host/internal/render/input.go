package render

// This file holds the reading of Render's input: Profiles, and the Secrets
// and ConfigMaps that stand for cluster objects, from YAML or JSON streams.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	kubeflowv1beta1 "github.com/profilekit/profilekit/api/kubeflow/v1beta1"
)

// ReadProfiles reads the Profiles in a stream of YAML or JSON documents; name
// names the stream in errors. Both served versions, kubeflow.org/v1 and
// kubeflow.org/v1beta1, are read (they have the same fields) and returned as
// v1. Unknown fields are errors, as the API server's strict field validation
// would make them.
func ReadProfiles(in io.Reader, name string) ([]*kubeflowv1.Profile, error) {
	ps, objs, err := ReadInput(in, name)
	if err == nil && len(objs) > 0 {
		err = fmt.Errorf("%s: %s %s: want only Profiles", name, objs[0].GetObjectKind().GroupVersionKind().Kind, objs[0].GetName())
	}
	return ps, err
}

// ReadInput reads Profiles as ReadProfiles does, and v1 Secrets and
// ConfigMaps, which stand for cluster objects that plugins read (the
// replicate plugin's sources).
func ReadInput(in io.Reader, name string) ([]*kubeflowv1.Profile, []client.Object, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	var out []*kubeflowv1.Profile
	var objs []client.Object
	for i := 1; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err == nil && tm.APIVersion == "v1" && (tm.Kind == "Secret" || tm.Kind == "ConfigMap") {
			var obj client.Object = &corev1.Secret{}
			if tm.Kind == "ConfigMap" {
				obj = &corev1.ConfigMap{}
			}
			if err := decodeStrict(doc, obj); err != nil {
				return nil, nil, fmt.Errorf("%s: document %d: %w", name, i, err)
			}
			if s, ok := obj.(*corev1.Secret); ok {
				// The API server folds stringData into data.
				for k, v := range s.StringData {
					if s.Data == nil {
						s.Data = map[string][]byte{}
					}
					s.Data[k] = []byte(v)
				}
				s.StringData = nil
			}
			objs = append(objs, obj)
			continue
		}
		var p kubeflowv1.Profile
		if err := decodeStrict(doc, &p); err != nil {
			return nil, nil, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		if !IsProfile(p.APIVersion, p.Kind) {
			return nil, nil, fmt.Errorf("%s: document %d: want apiVersion %s or %s, kind Profile, got %q, %q", name, i, kubeflowv1.GroupVersion, kubeflowv1beta1.GroupVersion, p.APIVersion, p.Kind)
		}
		p.APIVersion = kubeflowv1.GroupVersion.String()
		if p.Name == "" {
			return nil, nil, fmt.Errorf("%s: document %d: Profile has no metadata.name", name, i)
		}
		out = append(out, &p)
	}
	return out, objs, nil
}

// IsProfile reports whether apiVersion and kind name a Profile in a version
// the API server serves.
func IsProfile(apiVersion, kind string) bool {
	return kind == "Profile" && (apiVersion == kubeflowv1.GroupVersion.String() || apiVersion == kubeflowv1beta1.GroupVersion.String())
}

// decodeStrict decodes a YAML document, failing on unknown and duplicate
// fields with their paths (spec.ownr), as the API server's strict field
// validation would.
func decodeStrict(doc []byte, v any) error {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(js, v)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for line := range bytes.Lines(doc) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			b.Write(line)
		}
	}
	return b.Bytes()
}
