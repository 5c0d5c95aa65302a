package outside_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/profilekit/profilekit/internal/testenv"
)

// env is the package's API server, for what a fake client does not do as
// a server does: UID preconditions, names taken by a create, creation
// times. The other tests use a fake client.
var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

// recordsNamespace makes a namespace of its own for one test's records
// and returns its name.
func recordsNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "records-"}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}
