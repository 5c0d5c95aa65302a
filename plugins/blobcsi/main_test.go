package blobcsi_test

// This file holds the package's TestMain: a kube-apiserver with
// kube-controller-manager and Azurite, started once for every test, and
// the account Secret the instances share.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/internal/testenv"
	"github.com/profilekit/profilekit/plugins/blobcsi"
)

var (
	env     *testenv.Env
	azurite *testenv.Azurite
)

const (
	condType  = "BlobcsiReady"
	systemNS  = "profilekit-system"
	secret    = "azurite-credentials"
	pollEvery = 300 * time.Millisecond
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	// Fuzz workers run pure functions only: no servers.
	if slices.ContainsFunc(os.Args[1:], func(a string) bool { return strings.HasPrefix(a, "-test.fuzzworker") }) {
		return m.Run()
	}
	// Most tests wait on kube-controller-manager, a poll interval or a
	// restart, and each has a grants source of its own.
	testenv.Parallel(4)
	fail := func(err error) int { fmt.Fprintf(os.Stderr, "testenv: %v\n", err); return 1 }
	var err error
	if azurite, err = testenv.StartAzurite(); err != nil {
		return fail(err)
	}
	defer azurite.Close()
	if env, err = testenv.Start(testenv.Options{ControllerManager: true}); err != nil {
		return fail(err)
	}
	defer func() { _ = env.Stop() }()
	ctx := context.Background() //nolint:forbidigo // no *testing.T in reach
	for _, obj := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: systemNS}, StringData: map[string]string{
			blobcsi.SecretAccountName: azurite.Account, blobcsi.SecretAccountKey: azurite.Key}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			return fail(err)
		}
	}
	return m.Run()
}
