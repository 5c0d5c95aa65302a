package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/template"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// tenant is what the templates are rendered with: UIDs holds the uid of
// each object of the tenant created so far, by kind, for a later document
// that names an earlier one as its owner.
type tenant struct {
	Name  string
	Index int
	UIDs  map[string]string
}

// tenantOf names tenant i; -1 is the warm-up tenant.
func tenantOf(i int) tenant {
	if i < 0 {
		return tenant{Name: "warmup", Index: -1}
	}
	return tenant{Name: fmt.Sprintf("tenant-%05d", i), Index: i}
}

// documentSeparator splits a YAML file into its documents.
var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// parseDocuments parses each document of a tenant's template as a template
// of its own, rendered once the documents before it have been created.
func parseDocuments(text string) ([]*template.Template, error) {
	var docs []*template.Template
	for i, doc := range documentSeparator.Split(text, -1) {
		d, err := template.New(fmt.Sprint("document ", i+1)).Option("missingkey=error").Parse(doc)
		if err != nil {
			return nil, fmt.Errorf("tenant template: %w", err)
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// create renders the tenant's documents and creates each object, in the
// template's order.
func (x *external) create(ctx context.Context, t tenant) error {
	t.UIDs = map[string]string{}
	for _, doc := range x.docs {
		var buf bytes.Buffer
		if err := doc.Execute(&buf, t); err != nil {
			return fmt.Errorf("tenant %s: %w", t.Name, err)
		}
		var obj unstructured.Unstructured
		if err := utilyaml.NewYAMLOrJSONDecoder(&buf, 4096).Decode(&obj.Object); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("tenant %s: decode %s: %w", t.Name, doc.Name(), err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		m, err := x.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("tenant %s: %s: %w", t.Name, gvk, err)
		}
		r := x.dyn.Resource(m.Resource)
		var made *unstructured.Unstructured
		if m.Scope.Name() == "namespace" {
			made, err = r.Namespace(obj.GetNamespace()).Create(ctx, &obj, metav1.CreateOptions{})
		} else {
			made, err = r.Create(ctx, &obj, metav1.CreateOptions{})
		}
		if err != nil {
			return fmt.Errorf("tenant %s: create %s %s: %w", t.Name, gvk.Kind, obj.GetName(), err)
		}
		t.UIDs[gvk.Kind] = string(made.GetUID())
	}
	return nil
}

// waitConverged polls, every half second, until the namespace of every
// tenant holds at least the wanted number of objects of each resource.
func (x *external) waitConverged(ctx context.Context, tenants []tenant) error {
	want := map[schema.GroupVersionResource]int{}
	for arg, n := range x.o.Want {
		gvr, err := x.mapper.ResourceFor(schema.ParseGroupResource(arg).WithVersion(""))
		if err != nil {
			return fmt.Errorf("wanted resource %q: %w", arg, err)
		}
		want[gvr] = n
	}
	namespaces := make([]string, len(tenants))
	for i, t := range tenants {
		var buf strings.Builder
		if err := x.ns.Execute(&buf, t); err != nil {
			return fmt.Errorf("tenant %s's namespace: %w", t.Name, err)
		}
		namespaces[i] = buf.String()
	}
	for {
		missing, example, err := x.missing(ctx, want, namespaces)
		if err != nil {
			return err
		}
		if missing == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d tenants not converged (%s): %w", missing, example, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// missing counts the tenants whose namespace lacks a wanted object, and
// describes one of them.
func (x *external) missing(ctx context.Context, want map[schema.GroupVersionResource]int, namespaces []string) (int, string, error) {
	short := map[string]bool{}
	example := ""
	for gvr, n := range want {
		list, err := x.meta.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, "", fmt.Errorf("list %s: %w", gvr.Resource, err)
		}
		per := map[string]int{}
		for _, o := range list.Items {
			per[o.Namespace]++
		}
		for _, ns := range namespaces {
			if per[ns] < n && !short[ns] {
				short[ns] = true
				example = fmt.Sprintf("%s has %d %s of %d", ns, per[ns], gvr.Resource, n)
			}
		}
	}
	return len(short), example, nil
}
