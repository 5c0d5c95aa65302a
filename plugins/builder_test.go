package plugins_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/apply"
)

type builderConfig struct{}

// TestBuilderWritesOnlyWhatBuildLetsIt: a Build error writes nothing,
// unless AfterWrite marks it; then the objects are written and the error
// is reported, terminal as it was.
func TestBuilderWritesOnlyWhatBuildLetsIt(t *testing.T) {
	p := &kubeflowv1.Profile{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "uid-1"}}
	gate := plugins.Terminalf(plugins.ReasonInvalidLabel, "label gate: %q is not a boolean", "maybe")
	for _, tt := range []struct {
		reason      string
		err         error
		wantWritten int
		wantErr     string
		wantReason  string
	}{
		{reason: "no error writes", wantWritten: 1},
		{reason: "an error writes nothing", err: plugins.Terminalf(plugins.ReasonInvalidSpec, "selector: bad"), wantErr: "selector: bad", wantReason: plugins.ReasonInvalidSpec},
		{reason: "an error after the write writes, then reports", err: plugins.AfterWrite(gate), wantWritten: 1, wantErr: "is not a boolean", wantReason: plugins.ReasonInvalidLabel},
		{reason: "AfterWrite of nil is no error", err: plugins.AfterWrite(nil), wantWritten: 1},
	} {
		t.Run(tt.reason, func(t *testing.T) {
			b := plugins.Builder[builderConfig]{KindName: "demo", Build: func(*builderConfig, *kubeflowv1.Profile) ([]runtime.ApplyConfiguration, error) {
				return []runtime.ApplyConfiguration{corev1ac.ConfigMap("demo", "team")}, tt.err
			}}
			rec := apply.NewRecorder("demo", p, []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap")})
			_, err := b.Apply(t.Context(), plugins.Request{Profile: p, Config: &builderConfig{}, Objects: rec})
			if got := len(rec.Recorded()); got != tt.wantWritten {
				t.Errorf("written %d objects, want %d", got, tt.wantWritten)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Apply = %v, want no error", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Apply = %v, want an error containing %q", err, tt.wantErr)
			case tt.wantErr != "":
				if !plugins.IsTerminal(err) || plugins.ReasonOf(err, "") != tt.wantReason {
					t.Errorf("Apply = %v: terminal %v, reason %q; want terminal with reason %q", err, plugins.IsTerminal(err), plugins.ReasonOf(err, ""), tt.wantReason)
				}
				var te *plugins.TerminalError
				if !errors.As(err, &te) {
					t.Errorf("Apply = %v, want a *TerminalError inside", err)
				}
			}
		})
	}
}
