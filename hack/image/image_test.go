package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	testVersion  = "v1.2.3-test"
	testRevision = "0123456789abcdef0123456789abcdef01234567"
	testEpoch    = "1795422263" // 2026-11-23T08:24:23Z
	systemCerts  = "/etc/ssl/certs/ca-certificates.crt"
)

var testCreated = time.Unix(1795422263, 0).UTC()

// buildHello runs the build command on testdata/hello, a small stand-in for
// the host binary that prints what is linked into it, for the machine's
// architecture, and returns the layout folder and the command's output.
func buildHello(t *testing.T) (string, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "layout")
	var stdout bytes.Buffer
	err := run(t.Context(), []string{"build", "--src", ".", "--package", "./testdata/hello", "--out", out,
		"--platforms", "linux/" + runtime.GOARCH, "--version", testVersion, "--revision", testRevision,
		"--source-date-epoch", testEpoch, "--ca-certificates", systemCerts}, &stdout)
	if err != nil {
		t.Fatalf("build: %v\n%s", err, stdout.String())
	}
	return out, stdout.String()
}

func TestBuild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Fatalf("the build test runs the image's binary, which needs linux, not %s", runtime.GOOS)
	}
	dir, stdout := buildHello(t)
	// The command takes the binary back out of the image and runs it.
	if want := "hello " + testVersion + "\nrevision: " + testRevision + "\n"; !strings.Contains(stdout, want) {
		t.Errorf("build output lacks the binary's output %q:\n%s", want, stdout)
	}

	idx, err := readLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIImageIndex || len(m.Manifests) != 1 {
		t.Fatalf("index %s with %d manifests, want one OCI image index entry", m.MediaType, len(m.Manifests))
	}
	want := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	if runtime.GOARCH == "arm64" {
		want.Variant = "v8"
	}
	if p := m.Manifests[0].Platform; p == nil || !p.Equals(want) {
		t.Errorf("platform %v, want %v", p, want)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/profilekit"}) || c.Cmd != nil {
		t.Errorf("entrypoint %q cmd %q", c.Entrypoint, c.Cmd)
	}
	if c.User != "65532:65532" || c.WorkingDir != "/home/profilekit" || !slices.Equal(c.Env, []string{pathEnv}) {
		t.Errorf("user %q, working dir %q, env %q", c.User, c.WorkingDir, c.Env)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || !cf.Created.Equal(testCreated) {
		t.Errorf("config os %s architecture %s created %s", cf.OS, cf.Architecture, cf.Created)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.title":    "profilekit",
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.source":   "https://github.com/profilekit/profilekit",
		"org.opencontainers.image.version":  testVersion,
		"org.opencontainers.image.revision": testRevision,
		"org.opencontainers.image.created":  "2026-11-23T08:24:23Z",
	}
	if fmt.Sprint(c.Labels) != fmt.Sprint(wantLabels) {
		t.Errorf("labels\n got %v\nwant %v", c.Labels, wantLabels)
	}

	// Every entry belongs to root and carries the commit time; the folders
	// are 0755, so that the user can read everything and write nothing.
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, l := range layers {
		if mt, _ := l.MediaType(); mt != types.OCILayer {
			t.Errorf("layer media type %s", mt)
		}
		got = append(got, entries(t, l))
	}
	wantLayers := [][]string{
		{"etc/ 755", "etc/group 644", "etc/passwd 644", "etc/ssl/ 755", "etc/ssl/certs/ 755",
			"etc/ssl/certs/ca-certificates.crt 644", "home/ 755", "home/profilekit/ 755"},
		{"usr/ 755", "usr/local/ 755", "usr/local/bin/ 755", "usr/local/bin/profilekit 755"},
	}
	if fmt.Sprint(got) != fmt.Sprint(wantLayers) {
		t.Errorf("layers\n got %v\nwant %v", got, wantLayers)
	}

	passwd := extract(t, img, "/etc/passwd")
	if !slices.Contains(strings.Split(passwd, "\n"), "profilekit:x:65532:65532:profilekit:/home/profilekit:/sbin/nologin") {
		t.Errorf("/etc/passwd has no entry for the user:\n%s", passwd)
	}
	if group := extract(t, img, "/etc/group"); !slices.Contains(strings.Split(group, "\n"), "profilekit:x:65532:") {
		t.Errorf("/etc/group has no entry for the user's group:\n%s", group)
	}
	certs, err := os.ReadFile(systemCerts)
	if err != nil {
		t.Fatal(err)
	}
	if extract(t, img, certsPath) != string(certs) {
		t.Errorf("%s in the image differs from %s", certsPath, systemCerts)
	}
}

// entries lists a layer as "name mode" lines, and fails the test on an
// entry that root does not own or that is not dated at the commit time.
func entries(t *testing.T, l v1.Layer) []string {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out []string
	err = eachEntry(rc, func(h *tar.Header, _ io.Reader) error {
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(testCreated) {
			t.Errorf("%s: owner %d:%d, modified %s", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		out = append(out, fmt.Sprintf("%s %o", h.Name, h.Mode))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func extract(t *testing.T, img v1.Image, name string) string {
	t.Helper()
	data, err := extractFile(img, name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestBuildIsReproducible(t *testing.T) {
	a, _ := buildHello(t)
	b, _ := buildHello(t)
	da, db := indexDigest(t, a), indexDigest(t, b)
	if da != db {
		t.Errorf("two builds of the same source: %s and %s", da, db)
	}
}

func indexDigest(t *testing.T, dir string) v1.Hash {
	t.Helper()
	idx, err := readLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestPush(t *testing.T) {
	dir, _ := buildHello(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/platform/profilekit:" + testVersion

	var stdout bytes.Buffer
	if err := push(t.Context(), &stdout, dir, ref); err != nil {
		t.Fatal(err)
	}
	want := indexDigest(t, dir)
	if !strings.Contains(stdout.String(), want.String()) {
		t.Errorf("push output %q does not name the digest %s", stdout.String(), want)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(r, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	got, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("the registry holds %s, the layout %s", got, want)
	}
	img, err := remote.Image(r, remote.WithContext(t.Context()), remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
	if err != nil {
		t.Fatal(err)
	}
	if extract(t, img, "/etc/group") == "" {
		t.Error("the pushed image has an empty /etc/group")
	}
}

func TestParsePlatforms(t *testing.T) {
	for _, tc := range []struct {
		reason, in, want string
	}{
		{reason: "arm64 images carry the v8 variant", in: "linux/amd64, linux/arm64", want: "[linux/amd64 linux/arm64/v8]"},
		{reason: "an image of another system cannot hold the linux binary", in: "windows/amd64", want: "error"},
	} {
		ps, err := parsePlatforms(tc.in)
		got := "error"
		if err == nil {
			got = fmt.Sprint(ps)
		}
		if got != tc.want {
			t.Errorf("%s: parsePlatforms(%q) = %s, want %s", tc.reason, tc.in, got, tc.want)
		}
	}
}
