package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"time"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct{ cmd, args string }

// readDockerfile returns the instructions of each stage.
func readDockerfile(t *testing.T, name string) [][]instruction {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stages [][]instruction
	var line string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(text, `\`); ok {
			line += cont + " "
			continue
		}
		line += text
		cmd, args, _ := strings.Cut(line, " ")
		line = ""
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			continue // ARGs before the first FROM
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return stages
}

// words splits shell-like words, removing double quotes.
func words(s string) []string {
	var out []string
	var w strings.Builder
	quoted, in := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				out = append(out, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, w.String())
	}
	return out
}

// TestDockerfileAgrees checks that the Dockerfile builds what the builder
// builds: the same go build command, the same files from the same sources,
// and the same configuration.
func TestDockerfileAgrees(t *testing.T) {
	stages := readDockerfile(t, "../../Dockerfile")
	if len(stages) != 2 {
		t.Fatalf("want a build stage and the image, found %d stages", len(stages))
	}
	build, final := stages[0], stages[1]
	buildName := words(build[0].args)[2]
	if final[0].args != "scratch" {
		t.Errorf("the image is FROM %s; the builder starts from nothing", final[0].args)
	}

	// The build stage runs the builder's go command.
	const dockerOut = "/out/profilekit"
	var quoted []string
	for _, a := range goBuildArgs(dockerOut, hostPackage, "${VERSION}", "${REVISION}") {
		if strings.Contains(a, " ") {
			a = `"` + a + `"`
		}
		quoted = append(quoted, a)
	}
	wantRun := "CGO_ENABLED=0 go " + strings.Join(quoted, " ")
	if !slices.Contains(build, instruction{"RUN", wantRun}) {
		t.Errorf("the build stage does not run\n%s", wantRun)
	}

	// The image: files, folders and configuration.
	copies := map[string]string{}
	dirs := map[string]bool{}
	args := map[string]bool{}
	var config []string
	for _, in := range final[1:] {
		switch in.cmd {
		case "COPY":
			w := words(in.args)
			from := "context:"
			if f, ok := strings.CutPrefix(w[0], "--from="); ok {
				from, w = f+":", w[1:]
			}
			if len(w) != 2 {
				t.Fatalf("COPY %s: copy one file per instruction", in.args)
			}
			copies[w[1]] = from + w[0]
			for d := path.Dir(w[1]); d != "/"; d = path.Dir(d) {
				dirs[d] = true
			}
		case "WORKDIR":
			for d := in.args; d != "/"; d = path.Dir(d) {
				dirs[d] = true
			}
			config = append(config, "WorkingDir="+in.args)
		case "USER":
			config = append(config, "User="+in.args)
		case "ENV":
			config = append(config, "Env="+in.args)
		case "ENTRYPOINT":
			var ep []string
			if err := json.Unmarshal([]byte(in.args), &ep); err != nil {
				t.Errorf("ENTRYPOINT %s: write it in JSON form: %v", in.args, err)
			}
			config = append(config, fmt.Sprintf("Entrypoint=%q", ep))
		case "LABEL":
			for _, kv := range words(in.args) {
				config = append(config, "Label "+kv)
			}
		case "ARG":
			n, _, _ := strings.Cut(in.args, "=")
			args[n] = true
		default:
			t.Errorf("%s %s: the builder has no counterpart of this instruction", in.cmd, in.args)
		}
	}

	wantCopies := map[string]string{
		certsPath:     buildName + ":" + certsPath,
		"/etc/passwd": "context:hack/image/etc/passwd",
		"/etc/group":  "context:hack/image/etc/group",
		binaryPath:    buildName + ":" + dockerOut,
	}
	if fmt.Sprint(copies) != fmt.Sprint(wantCopies) {
		t.Errorf("the Dockerfile copies\n%v\nthe builder\n%v", copies, wantCopies)
	}

	// The builder's layers hold exactly those files and their folders.
	base, err := baseLayer(systemCerts, testCreated)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := tarLayer([]file{{name: binaryPath, mode: 0o755}}, testCreated)
	if err != nil {
		t.Fatal(err)
	}
	var files, folders []string
	for _, e := range append(entries(t, base), entries(t, bin)...) {
		name, _, _ := strings.Cut(e, " ")
		if d, ok := strings.CutSuffix(name, "/"); ok {
			folders = append(folders, "/"+d)
		} else {
			files = append(files, "/"+name)
		}
	}
	if got, want := slices.Sorted(maps.Keys(copies)), files; !slices.Equal(got, want) {
		t.Errorf("the Dockerfile's files %v, the builder's %v", got, want)
	}
	if got, want := slices.Sorted(maps.Keys(dirs)), folders; !slices.Equal(got, want) {
		t.Errorf("the Dockerfile's folders %v, the builder's %v", got, want)
	}

	wantConfig := []string{
		"WorkingDir=" + workDir,
		"Env=" + pathEnv,
		"User=" + user(),
		fmt.Sprintf("Entrypoint=%q", entrypoint()),
	}
	l := labels("${VERSION}", "${REVISION}", time.Time{})
	l["org.opencontainers.image.created"] = "${CREATED}"
	for k, v := range l {
		wantConfig = append(wantConfig, "Label "+k+"="+v)
	}
	slices.Sort(config)
	slices.Sort(wantConfig)
	if !slices.Equal(config, wantConfig) {
		t.Errorf("the Dockerfile's configuration\n%s\nthe builder's\n%s", strings.Join(config, "\n"), strings.Join(wantConfig, "\n"))
	}
	for _, a := range []string{"VERSION", "REVISION", "CREATED"} {
		if !args[a] {
			t.Errorf("the image stage does not declare ARG %s", a)
		}
	}
}
