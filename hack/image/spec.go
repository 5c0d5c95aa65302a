package main

import (
	"embed"
	"fmt"
	"time"
)

// What the image holds and how it runs. The Dockerfile at the repository's
// root builds the same image with Docker; TestDockerfileAgrees keeps the two
// in step.
const (
	// uid and gid are the non-root user the host runs as. The image's User is
	// numeric so that Kubernetes can check runAsNonRoot without reading
	// /etc/passwd.
	uid = 65532
	gid = 65532

	// workDir is the user's home in /etc/passwd. Like every path in the
	// image, it belongs to root: the host writes nothing to its file system.
	workDir    = "/home/profilekit"
	binaryPath = "/usr/local/bin/profilekit"
	certsPath  = "/etc/ssl/certs/ca-certificates.crt"
	pathEnv    = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

	// hostPackage is the host binary's package, relative to the repository.
	hostPackage = "./examples/host"

	title    = "profilekit"
	licenses = "Apache-2.0"
	source   = "https://github.com/profilekit/profilekit"
)

// etcFiles are /etc/passwd and /etc/group of the image, which the
// Dockerfile copies from the same folder.
//
//go:embed etc/passwd etc/group
var etcFiles embed.FS

// user is the image's User.
func user() string { return fmt.Sprintf("%d:%d", uid, gid) }

// entrypoint is the image's Entrypoint; the command comes from the
// Deployment's args (run, render, validate, version).
func entrypoint() []string { return []string{binaryPath} }

// labels are the image's OCI annotations. created is the source's commit
// time, so that a rebuild of one commit gives the same image.
func labels(version, revision string, created time.Time) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    title,
		"org.opencontainers.image.licenses": licenses,
		"org.opencontainers.image.source":   source,
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.created":  created.UTC().Format(time.RFC3339),
	}
}

// goBuildArgs are the arguments of the go command that builds pkg into out:
// static (CGO_ENABLED=0 in the environment), without local paths or VCS
// status in the binary, the version and revision linked into the host's
// main.version and main.revision, which profilekit version prints.
func goBuildArgs(out, pkg, version, revision string) []string {
	return []string{"build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X main.version=" + version + " -X main.revision=" + revision,
		"-o", out, pkg}
}
