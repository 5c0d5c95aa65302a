package local

// This file finds the CRDs a plugin's kinds need: the Profile CRD embedded
// in api/kubeflow/crd, Istio's from the istio.io/api module, and the ones
// kept in this source tree.

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

// crdSource finds the CRDs of kinds that are not built in. The starter knows
// where Istio's live (the istio.io/api module profilekit builds with); a
// kind it cannot find a CRD for is reported, and its plugin left out.
type crdSource struct {
	repoRoot string
	istio    map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition
	istioErr error
	local    map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition
	localErr error
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

// find returns the CRD that serves gk: Istio's from the istio.io/api module,
// others (Kubeflow's PodDefault) from the CRD files the plugins' own tests
// install, under plugins/*/testdata.
func (c *crdSource) find(ctx context.Context, gk schema.GroupKind) (*apiextensionsv1.CustomResourceDefinition, error) {
	if !c.loaded {
		c.loaded = true
		c.istio, c.istioErr = c.loadIstio(ctx)
		c.local, c.localErr = c.loadLocal()
	}
	if d, ok := c.local[gk]; ok {
		return d, nil
	}
	if !strings.HasSuffix(gk.Group, ".istio.io") {
		return nil, errors.Join(fmt.Errorf("no CRD known for %s", gk), c.localErr)
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

// loadLocal reads the CRDs in plugins/*/testdata of the source tree.
func (c *crdSource) loadLocal() (map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(c.repoRoot, "plugins", "*", "testdata", "*.yaml"))
	if err != nil {
		return nil, err
	}
	crds := map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition{}
	var errs []error
	for _, f := range files {
		if err := readCRDs(f, crds); err != nil {
			errs = append(errs, err)
		}
	}
	return crds, errors.Join(errs...)
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
	crds := map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition{}
	if err := readCRDs(path, crds); err != nil {
		return nil, err
	}
	return crds, nil
}

// readCRDs adds the CRDs in a YAML file to crds, by group and kind; other
// documents are skipped.
func readCRDs(path string, crds map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read CRDs: %w", err)
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if len(bytes.TrimSpace(doc)) == 0 || yaml.Unmarshal(doc, &meta) != nil ||
			meta.Kind != "CustomResourceDefinition" || meta.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
			continue
		}
		var d apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(doc, &d); err != nil {
			return fmt.Errorf("decode %s: %w", path, err)
		}
		crds[schema.GroupKind{Group: d.Spec.Group, Kind: d.Spec.Names.Kind}] = &d
	}
}
