package hostapp

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/hostconfig"
	"github.com/profilekit/profilekit/examples/host/internal/render"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/plugins"
)

func newRenderCommand(app App) *cobra.Command {
	var config string
	var files []string
	cmd := &cobra.Command{
		Use:   "render --config host.yaml -f profile.yaml",
		Short: "Print the objects the plugins would write for Profiles, without a cluster",
		Long: `render runs every plugin that applies to each Profile, as the host
configured by --config would, and prints the objects it would apply as YAML
documents: Profiles in input order, then plugins by kind, then each plugin's
own order. Nothing is read from or written to a cluster; each plugin sees a
client that holds only its Profile and the v1 Secrets and ConfigMaps given
with -f (the sources the replicate plugin copies). A Secret's values are
never printed: each shows as its size. Owner references carry no uid, since
the Profile has none yet.

A Profile whose plugin spec or labels are invalid makes render print nothing
on stdout, the problems (Profile, plugin, field) on stderr, and exit 1.`,
		Example: `  profilekit render --config examples/host/config/host.yaml -f examples/profiles/team-a.yaml
  cat profiles/*.yaml | profilekit render --config host.yaml -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := readOffline(cmd, app, config, files)
			if err != nil {
				return err
			}
			out, err := render.New(in.cfg, in.reg, in.scheme).WithObjects(in.objects...).Render(cmd.Context(), in.profiles)
			for _, n := range out.Notes {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %s\n", n)
			}
			if err != nil {
				return err
			}
			// Write everything at once, so that a failure above never leaves
			// half a rendering on stdout for a pipe into kubectl apply.
			var b bytes.Buffer
			if err := render.WriteYAML(&b, out.Objects); err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(b.Bytes())
			return err
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "host configuration file (required)")
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "file or folder of Profile YAML documents (and Secrets and ConfigMaps the plugins read), or - for stdin; repeatable")
	return cmd
}

// offline is what render and validate read: the configuration, the
// plugins, the Profiles and objects given with -f, and the scheme.
type offline struct {
	cfg      *hostconfig.Config
	reg      *plugins.Registry
	profiles []*kubeflowv1.Profile
	objects  []client.Object
	scheme   *runtime.Scheme
}

// readOffline reads what render and validate work on.
func readOffline(cmd *cobra.Command, app App, config string, files []string) (*offline, error) {
	cfg, reg, err := loadConfig(app, config)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("-f is required: a file of Profiles, or - for stdin")
	}
	profiles, objects, err := readInputs(cmd.InOrStdin(), files)
	if err != nil {
		return nil, err
	}
	scheme, err := server.NewScheme()
	if err != nil {
		return nil, err
	}
	return &offline{cfg: cfg, reg: reg, profiles: profiles, objects: objects, scheme: scheme}, nil
}

// readInputs reads the Profiles (and the Secrets and ConfigMaps) of every
// -f argument as kubectl takes them: a file, a folder (its .yaml, .yml and
// .json files, in name order, not its sub-folders), or - for stdin.
func readInputs(stdin io.Reader, names []string) ([]*kubeflowv1.Profile, []client.Object, error) {
	var profiles []*kubeflowv1.Profile
	var objects []client.Object
	read := func(r io.Reader, name string) error {
		ps, objs, err := render.ReadInput(r, name)
		profiles = append(profiles, ps...)
		objects = append(objects, objs...)
		return err
	}
	for _, name := range names {
		if name == "-" {
			if err := read(stdin, "stdin"); err != nil {
				return nil, nil, err
			}
			continue
		}
		files, err := inputFiles(name)
		if err != nil {
			return nil, nil, err
		}
		for _, f := range files {
			if err := readFile(f, read); err != nil {
				return nil, nil, err
			}
		}
	}
	return profiles, objects, nil
}

// inputFiles returns name, or the manifest files of the folder name.
func inputFiles(name string) ([]string, error) {
	info, err := os.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("read profiles: %w", err)
	}
	if !info.IsDir() {
		return []string{name}, nil
	}
	entries, err := os.ReadDir(name)
	if err != nil {
		return nil, fmt.Errorf("read profiles: %w", err)
	}
	var files []string
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(name, e.Name()))
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("read profiles: folder %s holds no .yaml, .yml or .json file", name)
	}
	return files, nil
}

func readFile(name string, read func(io.Reader, string) error) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("read profiles: %w", err)
	}
	defer f.Close()
	return read(f, name)
}
