package apps

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilekit/profilekit/plugins/placeholders"
)

// Source is what Argo CD deploys for an app: a Git path or a Helm chart,
// with Helm, Kustomize or directory (plain or Jsonnet) options. It has the
// shape of an Argo CD Application's spec.source. Placeholders are allowed in
// the values the field comments name.
type Source struct {
	RepoURL        string `json:"repoURL"`
	TargetRevision string `json:"targetRevision,omitempty"`
	// Path in a Git repository; Chart in a Helm repository. One of them.
	Path  string `json:"path,omitempty"`
	Chart string `json:"chart,omitempty"`

	Helm      *Helm      `json:"helm,omitempty"`
	Kustomize *Kustomize `json:"kustomize,omitempty"`
	Directory *Directory `json:"directory,omitempty"`
}

// Helm options. ReleaseName, every string in ValuesObject and every
// parameter value take placeholders.
type Helm struct {
	ReleaseName string          `json:"releaseName,omitempty"`
	ValueFiles  []string        `json:"valueFiles,omitempty"`
	Parameters  []HelmParameter `json:"parameters,omitempty"`
	// ValuesObject is the chart's values; strings in it take placeholders.
	ValuesObject map[string]any `json:"valuesObject,omitempty"`
}

// HelmParameter is one --set (or --set-string) value.
type HelmParameter struct {
	Name        string `json:"name"`
	Value       string `json:"value"`
	ForceString bool   `json:"forceString,omitempty"`
}

// Kustomize options. NamePrefix, NameSuffix and the values of
// CommonLabels and CommonAnnotations take placeholders.
type Kustomize struct {
	NamePrefix        string            `json:"namePrefix,omitempty"`
	NameSuffix        string            `json:"nameSuffix,omitempty"`
	Images            []string          `json:"images,omitempty"`
	CommonLabels      map[string]string `json:"commonLabels,omitempty"`
	CommonAnnotations map[string]string `json:"commonAnnotations,omitempty"`
}

// Directory options for plain manifests or Jsonnet.
type Directory struct {
	Recurse bool     `json:"recurse,omitempty"`
	Include string   `json:"include,omitempty"`
	Exclude string   `json:"exclude,omitempty"`
	Jsonnet *Jsonnet `json:"jsonnet,omitempty"`
}

// Jsonnet options; the values of ExtVars and TLAs that are not code take
// placeholders.
type Jsonnet struct {
	ExtVars []JsonnetVar `json:"extVars,omitempty"`
	TLAs    []JsonnetVar `json:"tlas,omitempty"`
	Libs    []string     `json:"libs,omitempty"`
}

// JsonnetVar is one external variable or top-level argument.
type JsonnetVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Code  bool   `json:"code,omitempty"`
}

// SyncPolicy is Argo CD's sync policy for an app.
type SyncPolicy struct {
	// Automated syncs on every change; nil syncs only by hand.
	Automated   *Automated `json:"automated,omitempty"`
	SyncOptions []string   `json:"syncOptions,omitempty"`
	Retry       *Retry     `json:"retry,omitempty"`
}

// Automated sync options.
type Automated struct {
	Prune      bool `json:"prune,omitempty"`
	SelfHeal   bool `json:"selfHeal,omitempty"`
	AllowEmpty bool `json:"allowEmpty,omitempty"`
}

// Retry of failed syncs.
type Retry struct {
	Limit   int64    `json:"limit,omitempty"`
	Backoff *Backoff `json:"backoff,omitempty"`
}

// Backoff between sync retries, as Argo CD durations ("5s", "3m").
type Backoff struct {
	Duration    string `json:"duration,omitempty"`
	Factor      *int64 `json:"factor,omitempty"`
	MaxDuration string `json:"maxDuration,omitempty"`
}

// DefaultSyncPolicy is automated with prune and selfHeal: what a Profile's
// app should be, whatever happens to it in the cluster.
func DefaultSyncPolicy() *SyncPolicy {
	return &SyncPolicy{Automated: &Automated{Prune: true, SelfHeal: true}}
}

func (s *SyncPolicy) validate() error {
	var errs []error
	if s.Retry != nil && s.Retry.Backoff != nil {
		for _, d := range []struct{ field, v string }{{"duration", s.Retry.Backoff.Duration}, {"maxDuration", s.Retry.Backoff.MaxDuration}} {
			if d.v == "" {
				continue
			}
			if _, err := time.ParseDuration(d.v); err != nil {
				errs = append(errs, fmt.Errorf("%s %q: %w", field.NewPath("retry", "backoff", d.field), d.v, err))
			}
		}
	}
	for i, o := range s.SyncOptions {
		if !strings.Contains(o, "=") {
			errs = append(errs, fmt.Errorf("%s %q: want Key=Value", field.NewPath("syncOptions").Index(i), o))
		}
	}
	return errors.Join(errs...)
}

func (s *Source) validate() error {
	var errs []error
	if s.RepoURL == "" {
		errs = append(errs, errors.New("repoURL: required"))
	}
	if (s.Path == "") == (s.Chart == "") {
		errs = append(errs, errors.New("exactly one of path and chart is required"))
	}
	n := 0
	for _, set := range []bool{s.Helm != nil, s.Kustomize != nil, s.Directory != nil} {
		if set {
			n++
		}
	}
	if n > 1 {
		errs = append(errs, errors.New("at most one of helm, kustomize and directory"))
	}
	if s.Chart != "" && (s.Kustomize != nil || s.Directory != nil) {
		errs = append(errs, errors.New("a chart takes helm options only"))
	}
	s.eachTemplate(func(at *field.Path, v string) {
		if err := placeholders.Check(v, placeholderNames...); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at, err))
		}
	})
	if s.Helm != nil {
		for i, p := range s.Helm.Parameters {
			if p.Name == "" {
				errs = append(errs, fmt.Errorf("%s: name required", field.NewPath("helm", "parameters").Index(i)))
			}
		}
	}
	return errors.Join(errs...)
}

// eachTemplate calls fn with every value that takes placeholders.
func (s *Source) eachTemplate(fn func(at *field.Path, v string)) {
	if h := s.Helm; h != nil {
		fn(field.NewPath("helm", "releaseName"), h.ReleaseName)
		for i, p := range h.Parameters {
			fn(field.NewPath("helm", "parameters").Index(i).Child("value"), p.Value)
		}
		walkStrings(field.NewPath("helm", "valuesObject"), h.ValuesObject, fn)
	}
	if k := s.Kustomize; k != nil {
		fn(field.NewPath("kustomize", "namePrefix"), k.NamePrefix)
		fn(field.NewPath("kustomize", "nameSuffix"), k.NameSuffix)
		for _, key := range slices.Sorted(mapKeys(k.CommonLabels)) {
			fn(field.NewPath("kustomize", "commonLabels").Key(key), k.CommonLabels[key])
		}
		for _, key := range slices.Sorted(mapKeys(k.CommonAnnotations)) {
			fn(field.NewPath("kustomize", "commonAnnotations").Key(key), k.CommonAnnotations[key])
		}
	}
	if d := s.Directory; d != nil && d.Jsonnet != nil {
		for i, v := range d.Jsonnet.ExtVars {
			if !v.Code {
				fn(field.NewPath("directory", "jsonnet", "extVars").Index(i).Child("value"), v.Value)
			}
		}
		for i, v := range d.Jsonnet.TLAs {
			if !v.Code {
				fn(field.NewPath("directory", "jsonnet", "tlas").Index(i).Child("value"), v.Value)
			}
		}
	}
}

func walkStrings(at *field.Path, v any, fn func(at *field.Path, v string)) {
	switch v := v.(type) {
	case string:
		fn(at, v)
	case map[string]any:
		for _, k := range slices.Sorted(mapKeys(v)) {
			walkStrings(at.Key(k), v[k], fn)
		}
	case []any:
		for i, e := range v {
			walkStrings(at.Index(i), e, fn)
		}
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (s *Source) usesAppURL() bool {
	used := false
	s.eachTemplate(func(_ *field.Path, v string) { used = used || placeholders.Uses(v, PlaceholderAppURL) })
	return used
}

func (s *Source) usesRootURL() bool {
	used := false
	s.eachTemplate(func(_ *field.Path, v string) {
		used = used || placeholders.Uses(v, PlaceholderRootURL) || placeholders.Uses(v, PlaceholderAppURL)
	})
	return used
}

// Values are what an app's placeholders stand for, for one Profile.
type Values struct {
	placeholders.Values
	RootURL string
	AppURL  string
}

var extraRE = regexp.MustCompile(`\{\{\s*\.(RootURL|AppURL)\s*\}\}`)

// Expand replaces the placeholders in s with v.
func Expand(s string, v Values) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	s = extraRE.ReplaceAllStringFunc(s, func(m string) string {
		if extraRE.FindStringSubmatch(m)[1] == PlaceholderRootURL {
			return v.RootURL
		}
		return v.AppURL
	})
	return placeholders.Expand(s, v.Values)
}

// expandAny returns a deep copy of v with placeholders in every string
// expanded. Values are substituted into decoded data, never into YAML text,
// so that no value can add keys.
func expandAny(v any, vals Values) any {
	switch v := v.(type) {
	case string:
		return Expand(v, vals)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = expandAny(e, vals)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = expandAny(e, vals)
		}
		return out
	default:
		return v
	}
}
