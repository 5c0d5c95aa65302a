# The harness's mutation targets: contract-level mutants (mutation,
# mutation-sample, which make test runs), planted breakages (breakages) and
# source-level mutation with gremlins (mutation-source). The Makefile
# includes this file; its variables (LOCALBIN, HARNESS_TESTS, HARNESS_PKGS,
# HARNESS_ASSETS, HARNESS_SAMPLE_FLAGS, TEST_GOGC) are set there.

# MUTANTS picks the contract-level mutants of plugins/plugintest ("all", or
# names separated by commas); MUTATION_FLAGS, the plans (-short: the first
# and the last write of each step, as make test). A run of every mutant
# writes MUTATION_RECORD, which make test's sample reads: the plan that
# killed each mutant.
MUTANTS         ?= all
MUTATION_FLAGS  ?= -short
MUTATION_RECORD := $(CURDIR)/plugins/plugintest/testdata/mutation.txt

.PHONY: mutation-sample
mutation-sample: $(HARNESS_ASSETS) ## Run each contract-level mutant under the one plan that killed it in MUTATION_RECORD, for every plugin with a harness test (make test runs it); fails when one survives.
	@start=$$(date +%s); set -x; PLUGINTEST_MUTANT=all PLUGINTEST_MUTANT_RECORD=$(MUTATION_RECORD) GOGC=$(TEST_GOGC) go test $(HARNESS_SAMPLE_FLAGS) -run '$(HARNESS_TESTS)' $(addprefix ./,$(HARNESS_PKGS)); \
	status=$$?; set +x; echo "contract-level mutation sample: $$(( $$(date +%s) - start )) s"; exit $$status

.PHONY: mutation
mutation: $(HARNESS_ASSETS) ## Run the harness's plans under each contract-level mutant, for every plugin with a harness test, and print per plugin and mutant whether it was killed, survived, is declared equivalent or was not reached, the score per plugin, then the survivors; the whole output goes to bin/mutation.log.
	@PLUGINTEST_MUTANT='$(MUTANTS)' go test -count=1 -timeout 60m $(MUTATION_FLAGS) -run '$(HARNESS_TESTS)' -v $(addprefix ./,$(HARNESS_PKGS)) > $(LOCALBIN)/mutation.log 2>&1; status=$$?; \
	grep -E '^(ok|FAIL)' $(LOCALBIN)/mutation.log; \
	sed -nE 's/^ *[a-z_]+\.go:[0-9]+: mutant ([^ ]+) ([^:]+): (killed|survived|equivalent|not reached|wrongly equivalent)( .*)?$$/\1|\2|\3/p' $(LOCALBIN)/mutation.log | \
		awk -F'|' -f hack/mutation-table.awk; \
	echo "surviving mutants:"; grep -E 'mutant [^ ]+ [^:]+: (survived|wrongly equivalent)' $(LOCALBIN)/mutation.log | sed -E 's/^ *[a-z_]+\.go:[0-9]+: /\t/' || echo "	none"; \
	if [ '$(MUTANTS)' = all ] && [ '$(MUTATION_FLAGS)' = -short ]; then \
		mkdir -p $(dir $(MUTATION_RECORD)); \
		{ echo "# make mutation's record: scenario and test, mutant, result, the pattern and the plan that killed it (tab-separated); make test's sample reads it."; \
		  sed -nE 's/^ *[a-z_]+\.go:[0-9]+: record //p' $(LOCALBIN)/mutation.log | sort; } > $(MUTATION_RECORD); \
		echo "record written to $(MUTATION_RECORD)"; \
	fi; \
	exit $$status

# Breakages: deliberate bugs in plugins' source, one patch each in
# BREAKAGES_DIR (<NN>-<plugin>-<what>.patch, its first line saying what it
# breaks), that the harness alone must catch. make breakages applies each
# to a copy of the tree (the files git tracks and those it does not ignore,
# bin/ linked) and runs that plugin's harness test there, and only it
# (HARNESS_TESTS in ./plugins/<plugin>; irsa's is in plugins/plugintest),
# with BREAKAGE_FLAGS (-short: make test's sample); the logs go to
# BREAKAGES_LOGS.
BREAKAGES_DIR  ?= plugins/plugintest/testdata/breakages
BREAKAGE_FLAGS ?= -short
BREAKAGES_LOGS ?= $(LOCALBIN)/breakages

.PHONY: breakages
breakages: $(HARNESS_ASSETS) ## Apply each patch of plugins/plugintest/testdata/breakages to a copy of the tree and run only its plugin's harness test, which must fail: prints the plans that failed, a line per breakage and the time; fails when a patch no longer applies or the harness misses one.
	@start=$$(date +%s); status=0; summary=(); mkdir -p $(BREAKAGES_LOGS); \
	for patch in $(sort $(wildcard $(BREAKAGES_DIR)/*.patch)); do \
		name=$$(basename $$patch .patch); plugin=$$(echo $$name | cut -d- -f2); log=$(BREAKAGES_LOGS)/$$name.log; \
		case $$plugin in \
			irsa) pkg=./plugins/plugintest run='^TestIRSASurvivesEveryPerturbation$$' ;; \
			*) pkg=./plugins/$$plugin run='$(HARNESS_TESTS)' ;; \
		esac; \
		echo "$$name: $$(sed -n '1s/^# *//p' $$patch)"; \
		tmp=$$(mktemp -d); t0=$$(date +%s); \
		git ls-files -co --exclude-standard -z | grep -zv '^bin$$' | xargs -0 cp --parents -t $$tmp; \
		ln -s $$(readlink -f $(LOCALBIN)) $$tmp/bin; \
		abs=$$(realpath $$patch); if ! (cd $$tmp && git apply $$abs); then \
			summary+=("$$name: does not apply"); status=1; rm -rf $$tmp; continue; \
		fi; \
		echo "	go test -count=1 -failfast $(BREAKAGE_FLAGS) -run '$$run' $$pkg"; \
		(cd $$tmp && go test -count=1 -failfast -timeout 30m $(BREAKAGE_FLAGS) -run "$$run" $$pkg) > $$log 2>&1; rc=$$?; \
		rm -rf $$tmp; secs=$$(( $$(date +%s) - t0 )); \
		plan=$$(awk -v first=1 -f hack/breakage-plans.awk $$log); \
		if [ $$rc -ne 0 ] && [ -n "$$plan" ]; then \
			awk -f hack/breakage-plans.awk $$log; \
			summary+=("$$name: caught by $$plan ($$secs s)"); \
		elif [ $$rc -eq 0 ]; then \
			summary+=("$$name: NOT caught: the harness passed ($$secs s, see $$log)"); status=1; \
		else \
			tail -20 $$log; summary+=("$$name: the test failed without a failing plan ($$secs s, see $$log)"); status=1; \
		fi; \
	done; \
	printf '%s\n' "$${summary[@]}"; \
	echo "breakages: $$(( $$(date +%s) - start )) s"; exit $$status

# Source-level mutation: gremlins, pinned, mutates the code of each package
# of SOURCE_MUTATION_PKGS (operators: arithmetic, comparison boundaries and
# negations, increments, negatives) and runs that package's tests for each
# mutant, its plugintest scenario among them, with -short. gremlins copies
# the module for each worker, so it runs on a copy of the source without
# bin/ (the test servers are hundreds of megabytes), one worker at a time.
# gremlins v0.6.0 reports the conditions of a tagless switch's cases as not
# covered whatever the tests run (go-gremlins/gremlins#298): Go's coverage
# blocks leave case expressions out; plugins/plugintest/testdata/
# mutation-source.txt records those mutants run by hand. gremlins takes
# ./plugins for ./plugins/...: the package plugins runs in a copy of its own
# that keeps, of plugins/'s folders, only apply, which its tests import, and
# none of apply's tests; apply's files are not mutated there.
# SOURCE_MUTATION_SKIPS names, per package (package=pattern, a go test
# -skip pattern without spaces), the tests left out of each mutant's run,
# for a package whose harness scenario, load tests, or tests that wait on
# kube-controller-manager take most of its test time: a mutant killed
# without them is killed, and each one that lives must then be run against
# the package's whole tests before it is called lived (testdata/
# mutation-source.txt says so of each). SOURCE_MUTATION_SKIP, when set, is
# the pattern for every package instead. -count=1: gremlins times each
# mutant against its first, coverage run, which go test would answer from
# its cache on a copy of the same source made again (about 1 s instead of
# the package's tests), and every mutant would then time out.
GREMLINS_VERSION      := 0.6.0
GREMLINS              := $(LOCALBIN)/gremlins-v$(GREMLINS_VERSION)
SOURCE_MUTATION_SKIP  ?=
SOURCE_MUTATION_SKIPS ?= plugins/apps=Survives?EveryPerturbation plugins/budgets=TestBurstLoad|TestLoad \
	plugins/volumes=Survives?EveryPerturbation|TestReservationDoesNotOutliveItsProfile|TestVolumeOutlivesProfile|TestNextOwnerCannotClaimTheVolumeByName|TestHomeClaimBindsAfterAnInterruptedRemove|TestBoundVolumeIsLeftWhileItsClaimIsUnseen
SOURCE_MUTATION_PKGS ?= plugins plugins/limitrange plugins/quotas plugins/placeholders plugins/notebook plugins/egress plugins/namespacemeta plugins/rbac plugins/network plugins/contributors plugins/outside opa plugins/authpolicy plugins/expose plugins/irsa plugins/workloadidentity plugins/azureidentity plugins/replicate plugins/core plugins/templates plugins/internal/access plugins/internal/identities plugins/internal/quotanames plugins/apps plugins/volumes plugins/budgets

$(GREMLINS):
	@mkdir -p $(LOCALBIN)
	tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	GOBIN=$$tmp CGO_ENABLED=0 go install github.com/go-gremlins/gremlins/cmd/gremlins@v$(GREMLINS_VERSION) && mv $$tmp/gremlins $@

.PHONY: mutation-source
mutation-source: $(GREMLINS) envtest-assets test-servers argocd-crds prometheus-crds prometheus postgres-server ## Source-level mutation testing with gremlins of SOURCE_MUTATION_PKGS, each scored by its own tests and harness scenario (-short); prints each package's score and the mutants that lived; the output goes to bin/mutation-source/.
	@out=$(LOCALBIN)/mutation-source; rm -rf $$out; mkdir -p $$out/src; \
	git ls-files -co --exclude-standard -z | grep -zv '^bin$$' | xargs -0 cp --parents -t $$out/src; \
	status=0; for p in $(SOURCE_MUTATION_PKGS); do \
		name=$$(echo $$p | tr / -); start=$$(date +%s); src=$$out/src; exclude=(); \
		if [ $$p = plugins ]; then \
			src=$$out/src-plugins; rm -rf $$src; cp -r $$out/src $$src; \
			find $$src/plugins -mindepth 1 -maxdepth 1 -type d ! -name apply -exec rm -rf {} +; \
			rm -f $$src/plugins/apply/*_test.go; exclude=(--exclude-files 'apply/'); \
		fi; \
		skip='$(SOURCE_MUTATION_SKIP)'; skips='$(SOURCE_MUTATION_SKIPS)'; \
		if [ -z "$$skip" ]; then for e in $$skips; do [ "$${e%%=*}" = $$p ] && skip=$${e#*=}; done; fi; \
		[ -n "$$skip" ] && echo "$$p: tests left out of each mutant's run: $$skip"; \
		( cd $$src && GOFLAGS="-short -count=1$${skip:+ -skip=$$skip}" $(GREMLINS) unleash --workers 1 "$${exclude[@]}" --output $$out/$$name.json ./$$p ) > $$out/$$name.log 2>&1 || status=1; \
		echo "$$p: $$(grep -E '^Killed:' $$out/$$name.log | tr -d '\n'), $$(grep -E '^Test efficacy' $$out/$$name.log) ($$(( $$(date +%s) - start )) s)"; \
		sed -nE "s|^ *LIVED ([A-Z_]+) at (.*)$$|	lived: \1 at $$p/\2|p" $$out/$$name.log; \
		sed -nE 's/^ *NOT COVERED [A-Z_]+ at ([^:]+):.*/\1/p' $$out/$$name.log | sort | uniq -c | \
			awk '{ s = s (s ? ", " : "") $$2 " " $$1 } END { if (s) print "\tnot covered, by file: " s }'; \
	done; exit $$status

# Source-level mutation by hand: the mutants of one package that gremlins
# lists in its dry run (those it would run and those it calls not covered,
# the cases of a tagless switch among them), each made by hack/mutate in a
# copy of the module and judged by the package's -short tests, the test
# binary stopped at its first failing test: minutes where gremlins, which
# runs each mutant's tests whole, takes hours. MUTATION_HAND_PKG is the
# package (gitea, plugins/blobcsi), MUTATION_HAND_FILES a regular expression
# of its files to run (all when empty), MUTATION_HAND_SKIP the tests left out
# of each mutant's run. The record, a line per mutant, goes to
# bin/mutation-hand/<package>.txt; a mutant already there is not run again,
# so an interrupted run goes on where it stopped.
MUTATION_HAND_PKG   ?=
MUTATION_HAND_FILES ?=
MUTATION_HAND_SKIP  ?=

.PHONY: mutation-hand
mutation-hand: $(GREMLINS) $(HARNESS_ASSETS) ## Run each source-level mutant of MUTATION_HAND_PKG (gremlins' dry run) against the package's -short tests, stopping at the first failing test; the record goes to bin/mutation-hand/.
	@test -n '$(MUTATION_HAND_PKG)' || { echo "set MUTATION_HAND_PKG, the package's folder (gitea, plugins/blobcsi)"; exit 1; }
	@out=$(LOCALBIN)/mutation-hand; name=$$(echo $(MUTATION_HAND_PKG) | tr / -); mkdir -p $$out; \
	if [ ! -s $$out/$$name.dry-run ]; then \
		src=$$out/src; rm -rf $$src; mkdir -p $$src; \
		git ls-files -co --exclude-standard -z | grep -zv '^bin$$' | xargs -0 cp --parents -t $$src; ln -s $(LOCALBIN) $$src/bin; \
		(cd $$src && GOFLAGS="-short -count=1" $(GREMLINS) unleash --dry-run ./$(MUTATION_HAND_PKG)) > $$out/$$name.dry-run.tmp || exit 1; \
		mv $$out/$$name.dry-run.tmp $$out/$$name.dry-run; rm -rf $$src; \
	fi; \
	start=$$(date +%s); \
	go run ./hack/mutate -pkg $(MUTATION_HAND_PKG) -dry-run $$out/$$name.dry-run -files '$(MUTATION_HAND_FILES)' \
		-skip '$(MUTATION_HAND_SKIP)' -out $$out/$$name.txt; status=$$?; \
	awk -F'\t' '{ n[$$3]++ } END { for (k in n) printf "%s %d, ", k, n[k]; print "of " NR }' $$out/$$name.txt; \
	awk -F'\t' '$$3 == "LIVED" || $$3 == "TIMEOUT" { print "\t" $$3 ": " $$1 " " $$2 }' $$out/$$name.txt; \
	echo "mutation-hand: $$(( $$(date +%s) - start )) s"; exit $$status
