package main

import (
	"archive/tar"
	"fmt"
	"io"
	"maps"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// inspect prints, for each image of idx, its platform, digest,
// configuration and layers with their files.
func inspect(w io.Writer, idx v1.ImageIndex) error {
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "index %s (%s)\n", digest, m.MediaType)
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "\n%s %s\n", d.Platform, d.Digest)
		fmt.Fprintf(w, "  created     %s\n", cf.Created.UTC().Format("2006-01-02T15:04:05Z"))
		fmt.Fprintf(w, "  entrypoint  %q\n", cf.Config.Entrypoint)
		fmt.Fprintf(w, "  cmd         %q\n", cf.Config.Cmd)
		fmt.Fprintf(w, "  user        %s\n", cf.Config.User)
		fmt.Fprintf(w, "  workingDir  %s\n", cf.Config.WorkingDir)
		fmt.Fprintf(w, "  env         %q\n", cf.Config.Env)
		fmt.Fprintln(w, "  labels")
		for _, k := range slices.Sorted(maps.Keys(cf.Config.Labels)) {
			fmt.Fprintf(w, "    %s=%s\n", k, cf.Config.Labels[k])
		}
		layers, err := img.Layers()
		if err != nil {
			return err
		}
		for i, l := range layers {
			ld, err := l.Digest()
			if err != nil {
				return err
			}
			size, err := l.Size()
			if err != nil {
				return err
			}
			mt, err := l.MediaType()
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "  layer %d %s %s, %d bytes compressed\n", i+1, ld, mt, size)
			if err := listLayer(w, l); err != nil {
				return err
			}
		}
	}
	return nil
}

// listLayer prints a line per entry of the layer, as tar tv does.
func listLayer(w io.Writer, l v1.Layer) error {
	rc, err := l.Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	return eachEntry(rc, func(h *tar.Header, _ io.Reader) error {
		_, err := fmt.Fprintf(w, "    %s %d:%d %9d %s\n", h.FileInfo().Mode(), h.Uid, h.Gid, h.Size, h.Name)
		return err
	})
}
