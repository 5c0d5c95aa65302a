package demo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"github.com/profilekit/profilekit/api/kubeflow/crd"
	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// kinds returns every kind a plugin writes or watches.
func kinds(def plugins.Definition, s *runtime.Scheme) []schema.GroupVersionKind {
	out := append([]schema.GroupVersionKind(nil), def.Owns...)
	for _, w := range def.Watches {
		if gvk, err := apiutil.GVKForObject(w.Object, s); err == nil {
			out = append(out, gvk)
		}
	}
	return out
}

// builtIn reports whether a kind is served by every API server, so that it
// needs no CRD.
func builtIn(gvk schema.GroupVersionKind) bool {
	return clientgoscheme.Scheme.Recognizes(gvk) ||
		(gvk.Group == kubeflowv1.GroupVersion.Group && gvk.Kind == "Profile")
}

// crdSource finds the CRDs of kinds that are not built in. The demo knows
// where Istio's live (the istio.io/api module profilekit builds with); a
// kind it cannot find a CRD for is reported, and its plugin left out.
type crdSource struct {
	repoRoot string
	istio    map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition
	istioErr error
	loaded   bool
}

// profileCRD returns the embedded Profile CRD.
func profileCRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	var c apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(crd.Profiles, &c); err != nil {
		return nil, fmt.Errorf("decode the embedded Profile CRD: %w", err)
	}
	return &c, nil
}

// find returns the CRD that serves gk.
func (c *crdSource) find(ctx context.Context, gk schema.GroupKind) (*apiextensionsv1.CustomResourceDefinition, error) {
	if !strings.HasSuffix(gk.Group, ".istio.io") {
		return nil, fmt.Errorf("no CRD known for %s", gk)
	}
	if !c.loaded {
		c.loaded = true
		c.istio, c.istioErr = c.loadIstio(ctx)
	}
	if c.istioErr != nil {
		return nil, c.istioErr
	}
	d, ok := c.istio[gk]
	if !ok {
		return nil, fmt.Errorf("istio.io/api has no CRD for %s", gk)
	}
	return d, nil
}

// loadIstio reads the CRDs that ship in the istio.io/api module.
func (c *crdSource) loadIstio(ctx context.Context) (map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "istio.io/api")
	cmd.Dir = c.repoRoot
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("find the istio.io/api module for its CRDs (go list -m in %s): %w", c.repoRoot, err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "kubernetes", "customresourcedefinitions.gen.yaml")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("istio CRDs: %w", err)
	}
	defer f.Close()
	crds := map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var d apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(doc, &d); err != nil {
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		if d.Kind != "CustomResourceDefinition" {
			continue
		}
		crds[schema.GroupKind{Group: d.Spec.Group, Kind: d.Spec.Names.Kind}] = &d
	}
	return crds, nil
}
