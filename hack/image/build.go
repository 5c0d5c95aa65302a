package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// buildConfig says what to build.
type buildConfig struct {
	// src is the module root in which pkg is built.
	src, pkg string
	// platforms are the images of the index, all linux.
	platforms []v1.Platform
	// version and revision are linked into the binary and set as labels.
	version, revision string
	// created is the time of the config, the labels and every file's
	// modification time: the commit time, so that a rebuild is identical.
	created time.Time
	// certs is the CA bundle to copy into the image.
	certs string
	// work is a folder for the compiled binaries.
	work string
	// log receives a line per compiled platform.
	log io.Writer
}

// buildIndex compiles the binary for each platform and returns the
// multi-platform index of the images.
func buildIndex(ctx context.Context, c buildConfig) (v1.ImageIndex, error) {
	base, err := baseLayer(c.certs, c.created)
	if err != nil {
		return nil, err
	}
	var adds []mutate.IndexAddendum
	for _, p := range c.platforms {
		bin := filepath.Join(c.work, p.OS+"_"+p.Architecture, "profilekit")
		start := time.Now()
		if err := compile(ctx, c, p, bin); err != nil {
			return nil, err
		}
		fmt.Fprintf(c.log, "compiled %s for %s in %s\n", c.pkg, p, time.Since(start).Round(100*time.Millisecond))
		data, err := os.ReadFile(bin)
		if err != nil {
			return nil, err
		}
		binLayer, err := tarLayer([]file{{name: binaryPath, mode: 0o755, data: data}}, c.created)
		if err != nil {
			return nil, err
		}
		img, err := newImage(p, c, base, binLayer)
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...), nil
}

// compile builds the static binary for one platform.
func compile(ctx context.Context, c buildConfig, p v1.Platform, out string) error {
	cmd := exec.CommandContext(ctx, "go", goBuildArgs(out, c.pkg, c.version, c.revision)...)
	cmd.Dir = c.src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s: %w", c.pkg, p, err)
	}
	return nil
}

// newImage is the image of one platform: the base layer, the binary's
// layer, and the configuration.
func newImage(p v1.Platform, c buildConfig, base, bin v1.Layer) (v1.Image, error) {
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	created := v1.Time{Time: c.created}
	img, err := mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "/etc/passwd, /etc/group, CA certificates, " + workDir}},
		mutate.Addendum{Layer: bin, History: v1.History{Created: created, CreatedBy: "profilekit " + c.version + " for " + p.String()}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = created
	cf.Config = v1.Config{
		Entrypoint: entrypoint(),
		User:       user(),
		WorkingDir: workDir,
		Env:        []string{pathEnv},
		Labels:     labels(c.version, c.revision, c.created),
	}
	return mutate.ConfigFile(img, cf)
}

// baseLayer holds what every platform shares: the user, the CA
// certificates and the working directory.
func baseLayer(certs string, mtime time.Time) (v1.Layer, error) {
	bundle, err := os.ReadFile(certs)
	if err != nil {
		return nil, fmt.Errorf("CA certificates: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(bundle) {
		return nil, fmt.Errorf("CA certificates: %s holds no PEM certificate", certs)
	}
	files := []file{{name: certsPath, mode: 0o644, data: bundle}, {name: workDir, mode: 0o755, dir: true}}
	for _, name := range []string{"etc/passwd", "etc/group"} {
		data, err := fs.ReadFile(etcFiles, name)
		if err != nil {
			return nil, err
		}
		files = append(files, file{name: "/" + name, mode: 0o644, data: data})
	}
	return tarLayer(files, mtime)
}

// file is an entry of a layer, owned by root.
type file struct {
	name string
	mode int64
	dir  bool
	data []byte
}

// tarLayer makes a gzip-compressed OCI layer of the files and the folders
// that hold them (0755), sorted by name, each modified at mtime.
func tarLayer(files []file, mtime time.Time) (v1.Layer, error) {
	all := map[string]file{}
	for _, f := range files {
		f.name = path.Clean(f.name)[1:]
		all[f.name] = f
		for d := path.Dir(f.name); d != "."; d = path.Dir(d) {
			if _, ok := all[d]; !ok {
				all[d] = file{name: d, mode: 0o755, dir: true}
			}
		}
	}
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	slices.Sort(names)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range names {
		f := all[name]
		h := &tar.Header{Name: name, Mode: f.mode, ModTime: mtime.UTC(), Uname: "root", Gname: "root", Format: tar.FormatUSTAR}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

// writeLayout replaces dir with an OCI image layout that holds idx under
// the reference name version.
func writeLayout(dir string, idx v1.ImageIndex, version string) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
			return fmt.Errorf("%s is not empty and not an OCI layout; not replacing it", dir)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": version}))
}

// readLayout returns the index that writeLayout wrote into dir.
func readLayout(dir string) (v1.ImageIndex, error) {
	outer, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	m, err := outer.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
		return nil, fmt.Errorf("%s: want one image index in the layout, found %d manifests", dir, len(m.Manifests))
	}
	return outer.ImageIndex(m.Manifests[0].Digest)
}

// imageFor returns idx's image for the platform.
func imageFor(idx v1.ImageIndex, p v1.Platform) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == p.OS && d.Platform.Architecture == p.Architecture {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("no image for %s in the index", p)
}

// extractFile returns the content of the regular file name (absolute) from
// the image's file system.
func extractFile(img v1.Image, name string) ([]byte, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	var data []byte
	found := errors.New("found")
	err := eachEntry(rc, func(h *tar.Header, r io.Reader) error {
		if path.Clean("/"+h.Name) != name || h.Typeflag != tar.TypeReg {
			return nil
		}
		var err error
		if data, err = io.ReadAll(r); err != nil {
			return err
		}
		return found
	})
	switch {
	case errors.Is(err, found):
		return data, nil
	case err != nil:
		return nil, err
	}
	return nil, fmt.Errorf("no %s in the image", name)
}

// eachEntry calls fn with each entry of the tar stream r and its content,
// until fn returns an error.
func eachEntry(r io.Reader, fn func(*tar.Header, io.Reader) error) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(h, tr); err != nil {
			return err
		}
	}
}
