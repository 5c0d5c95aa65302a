// Command image builds the container image of the profilekit host without a
// Docker daemon, pushes it, and shows what it holds. It is its own module so
// that profilekit's go.mod does not depend on go-containerregistry.
//
//	go run . build --src ../.. --out ../../bin/image --version v0.3.0 --platforms linux/amd64,linux/arm64
//	go run . inspect ../../bin/image
//	go run . push ../../bin/image registry.internal/platform/profilekit:v0.3.0
//
// build compiles the host (CGO_ENABLED=0, -trimpath, version and revision
// linked in) for each platform, puts it on an empty base with CA
// certificates and a non-root user, writes a multi-platform OCI image
// layout, and then runs the host platform's binary, taken back out of the
// image, with version. push sends the layout's index to a registry with the
// credentials of the default keychain (docker login, credential helpers).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

const usage = `usage:
  image build [flags]          build the OCI layout (build -h for flags)
  image inspect LAYOUT         print each image's config and layers
  image push LAYOUT REFERENCE  push the layout's index to a registry`

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("no command\n%s", usage)
	}
	switch cmd, args := args[0], args[1:]; cmd {
	case "build":
		return buildCommand(ctx, args, stdout)
	case "inspect":
		if len(args) != 1 {
			return fmt.Errorf("inspect takes a layout folder\n%s", usage)
		}
		idx, err := readLayout(args[0])
		if err != nil {
			return err
		}
		return inspect(stdout, idx)
	case "push":
		if len(args) != 2 {
			return fmt.Errorf("push takes a layout folder and a reference\n%s", usage)
		}
		return push(ctx, stdout, args[0], args[1], remote.WithAuthFromKeychain(authn.DefaultKeychain))
	default:
		return fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
}

func buildCommand(ctx context.Context, args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("build", flag.ContinueOnError)
	src := fl.String("src", "../..", "the repository: the module root the host is built in")
	pkg := fl.String("package", hostPackage, "the package to build, relative to --src")
	out := fl.String("out", "../../bin/image", "the OCI layout to write (replaced)")
	platforms := fl.String("platforms", "linux/"+runtime.GOARCH, "comma-separated linux platforms of the index")
	version := fl.String("version", "", "version to link in and label (default: git describe of --src)")
	revision := fl.String("revision", "", "source revision to link in and label (default: git rev-parse HEAD of --src)")
	epoch := fl.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "creation time in Unix seconds (default: $SOURCE_DATE_EPOCH, else the commit time of --src)")
	certs := fl.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to copy into the image")
	if err := fl.Parse(args); err != nil {
		return err
	}
	c := buildConfig{src: *src, pkg: *pkg, version: *version, revision: *revision, certs: *certs, log: stdout}
	var err error
	if c.platforms, err = parsePlatforms(*platforms); err != nil {
		return err
	}
	if c.version == "" {
		if c.version, err = git(ctx, c.src, "describe", "--tags", "--always", "--dirty"); err != nil {
			return err
		}
	}
	if c.revision == "" {
		if c.revision, err = git(ctx, c.src, "rev-parse", "HEAD"); err != nil {
			return err
		}
	}
	if *epoch == "" {
		if *epoch, err = git(ctx, c.src, "log", "-1", "--format=%ct"); err != nil {
			return err
		}
	}
	secs, err := strconv.ParseInt(*epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("source date epoch %q: %w", *epoch, err)
	}
	c.created = time.Unix(secs, 0).UTC()
	if c.work, err = os.MkdirTemp("", "profilekit-image-"); err != nil {
		return err
	}
	defer os.RemoveAll(c.work)

	idx, err := buildIndex(ctx, c)
	if err != nil {
		return err
	}
	if err := writeLayout(*out, idx, c.version); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: index %s, profilekit %s, revision %s, created %s\n",
		*out, digest, c.version, c.revision, c.created.Format(time.RFC3339))
	return checkVersion(ctx, stdout, *out, c)
}

// checkVersion takes the binary of the host's platform back out of the
// layout, runs it with version, and checks that it prints the version and
// revision that were linked in. It does nothing when the index has no
// image for the host's platform.
func checkVersion(ctx context.Context, stdout io.Writer, dir string, c buildConfig) error {
	host := v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}
	if !slices.ContainsFunc(c.platforms, func(p v1.Platform) bool { return p.OS == host.OS && p.Architecture == host.Architecture }) {
		fmt.Fprintf(stdout, "no %s image to run version from\n", host)
		return nil
	}
	idx, err := readLayout(dir)
	if err != nil {
		return err
	}
	img, err := imageFor(idx, host)
	if err != nil {
		return err
	}
	data, err := extractFile(img, binaryPath)
	if err != nil {
		return err
	}
	bin := filepath.Join(c.work, "from-image")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		return err
	}
	got, err := exec.CommandContext(ctx, bin, "version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s from the image, version: %w\n%s", binaryPath, err, got)
	}
	fmt.Fprintf(stdout, "%s version (taken from the %s image):\n%s", binaryPath, host, got)
	for _, want := range []string{c.version, c.revision} {
		if !strings.Contains(string(got), want) {
			return fmt.Errorf("the binary in the image does not print %q", want)
		}
	}
	return nil
}

// parsePlatforms reads "linux/amd64,linux/arm64".
func parsePlatforms(s string) ([]v1.Platform, error) {
	var ps []v1.Platform
	for _, f := range strings.Split(s, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		if p.OS != "linux" {
			return nil, fmt.Errorf("platform %s: only linux images are built", p)
		}
		if p.Architecture == "arm64" && p.Variant == "" {
			p.Variant = "v8"
		}
		ps = append(ps, *p)
	}
	return ps, nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w (give the value as a flag outside a git checkout)", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
