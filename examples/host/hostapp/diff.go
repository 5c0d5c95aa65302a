package hostapp

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/examples/host/internal/diff"
	"github.com/profilekit/profilekit/examples/host/internal/server"
	"github.com/profilekit/profilekit/reconcilers"
)

type diffFlags struct {
	config       string
	kubeconfig   string
	files        []string
	all          bool
	serverDryRun bool
	concurrency  int
}

func newDiffCommand(app App, g *globals) *cobra.Command {
	f := &diffFlags{}
	cmd := &cobra.Command{
		Use:   "diff --config new.yaml (-f profiles.yaml | --all)",
		Short: "Show what a host configuration would change on a live cluster, before it runs",
		Long: `diff runs every plugin that the configuration given by --config enables on
each Profile, as run would on its next pass, and prints what would change:
a summary (Profiles touched, objects by kind and verb, outside calls), then a
unified diff of each object as YAML, by Profile, plugin and object.

It reads the cluster and writes nothing to it: every write a plugin would
send is recorded instead, and every outside call (a database, Azure, OPA,
cloud IAM) is refused and reported as "would call", never made. What a
server-side apply would make of a live object is merged locally, as the API
server merges it, over the object's managed fields: a field profilekit owns
that the new configuration drops shows as removed. Objects with profilekit's
labels that the configuration would prune show as deleted. It needs only
get, list and watch on the Profiles and on the kinds the plugins write and
read; --server-dry-run asks the API server to merge instead, which needs
patch rights (the API server authorizes a dry run as the write itself).

--all diffs every live Profile of the configuration's shard; -f diffs the
live Profiles named in the files (a Profile the cluster does not hold is
diffed as the file gives it). The cluster is the one --kubeconfig names,
else $KUBECONFIG, else the in-cluster service account, else ~/.kube/config.

Exit code 0: nothing would change; 1: something would; 2: diff failed, or
a plugin would fail on some Profile (each is reported, the others are still
diffed).`,
		Example: `  profilekit diff --config new-host.yaml --all
  profilekit diff --config new-host.yaml -f profiles/team-a.yaml | less`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			code, err := runDiff(cmd, app, g, f)
			if err != nil {
				return &exitError{code: diff.ExitError, err: err}
			}
			if code != diff.ExitSame {
				return &exitError{code: code}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "the host configuration to diff (required)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file of the cluster; empty uses $KUBECONFIG, the in-cluster service account, then ~/.kube/config")
	fl.StringArrayVarP(&f.files, "filename", "f", nil, "file or folder of Profiles whose live namesakes to diff, or - for stdin; repeatable")
	fl.BoolVar(&f.all, "all", false, "diff every live Profile of the configuration's shard")
	fl.BoolVar(&f.serverDryRun, "server-dry-run", false, "merge each apply with a dry run on the API server (needs patch rights) instead of locally")
	fl.IntVar(&f.concurrency, "concurrency", 8, "how many Profiles to diff at once")
	return cmd
}

// runDiff diffs and prints, and returns the exit code of the outcome.
func runDiff(cmd *cobra.Command, app App, g *globals, f *diffFlags) (int, error) {
	if f.all == (len(f.files) > 0) {
		return 0, errors.New("give either -f with files of Profiles or --all")
	}
	cfg, reg, err := loadConfig(app, f.config)
	if err != nil {
		return 0, err
	}
	scheme, err := server.NewScheme()
	if err != nil {
		return 0, err
	}
	restCfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return 0, err
	}
	restCfg = reconcilers.RateLimited(restCfg, cfg.Client.QPS, cfg.Client.Burst)
	c, err := client.NewWithWatch(restCfg, client.Options{Scheme: scheme})
	if err != nil {
		return 0, fmt.Errorf("client for the cluster: %w", err)
	}
	ctx := cmd.Context()
	var profiles []*kubeflowv1.Profile
	var notes []string
	if f.all {
		profiles, err = diff.LiveProfiles(ctx, c, cfg.Shard())
	} else {
		files, _, rerr := readInputs(cmd.InOrStdin(), f.files)
		if rerr != nil {
			return 0, rerr
		}
		profiles, notes, err = diff.NamedProfiles(ctx, c, files)
	}
	if err != nil {
		return 0, err
	}
	bar := g.progress(cmd, "Profiles", len(profiles))
	results := diff.New(cfg, reg, scheme, c, diff.Options{
		ServerDryRun: f.serverDryRun, Concurrency: f.concurrency, Progress: func() { bar.Add(1) },
	}).Diff(ctx, profiles)
	bar.Done()
	var out bytes.Buffer
	for _, n := range notes {
		fmt.Fprintf(&out, "note: %s\n", n)
	}
	if err := diff.WriteSummary(&out, results); err != nil {
		return 0, err
	}
	if err := diff.WriteDiffs(&out, results); err != nil {
		return 0, err
	}
	if _, err := cmd.OutOrStdout().Write(out.Bytes()); err != nil {
		return 0, err
	}
	code := diff.ExitCode(results)
	if code == diff.ExitError {
		failed := 0
		for _, r := range results {
			if len(r.Errors) > 0 {
				failed++
			}
		}
		return code, fmt.Errorf("%d of %d Profiles have errors; their diffs are incomplete", failed, len(results))
	}
	return code, nil
}

// exitError is an error that asks Main for an exit code of its own; with
// no err, Main prints nothing (diff's exit code 1 says that something
// would change, which is no failure).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit code %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitStatus returns the exit code for err, a command's error, and whether
// Main should print it.
func exitStatus(err error) (int, bool) {
	var exit *exitError
	if errors.As(err, &exit) {
		return exit.code, exit.err != nil
	}
	return 1, true
}
