package plugintest

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// T is what the harness needs of a test: a *testing.T.
type T interface {
	Helper()
	Name() string
	Context() context.Context
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Fatal(args ...any)
}

var _ T = (*testing.T)(nil)

// Scenario is one plugin, the host's defaults for it, and the steps one
// Profile takes with it: each step sets (or removes) the Profile's
// spec.plugins entry and is run to quiet.
type Scenario struct {
	// Def is the plugin.
	Def plugins.Definition
	// Defaults are the host's defaults for it (JSON), as a host passes them.
	Defaults []byte
	// Steps are run in order; the first makes the Profile.
	Steps []Step
	// MakesNamespace is true for a plugin that makes the Profile's
	// namespace itself (core); otherwise the harness makes it, as the
	// upstream controller or core would.
	MakesNamespace bool
	// Setup, when set, makes what the plugin expects in a new Profile's
	// namespace, such as the service accounts a cloud identity plugin
	// annotates.
	Setup func(ctx context.Context, c client.Client, namespace string) error
	// Observe, when set, returns what the plugin made true beyond its
	// objects for the Profile of namespace (an outside system's state, the
	// annotations it owns on objects it does not), compared after every
	// plan like its objects.
	Observe func(ctx context.Context, namespace string) (map[string]string, error)
	// Touches are the objects the plugin may write although it does not
	// own them (the objects it annotates), as "Kind <profile>/name".
	Touches []string
	// Grants, when set, returns the access the plugin gives in an outside
	// system for the Profile of namespace (a role's trust, an IAM binding,
	// a credential), one string per grant naming its principal. The
	// harness adds the subjects of the RoleBindings and the rules of the
	// AuthorizationPolicies the plugin owns. Checked after every write of a
	// plan: no grant may appear that neither the step before nor the step
	// after holds, not even for a moment.
	Grants func(ctx context.Context, namespace string) ([]string, error)
	// Data, when set, returns the user data the plugin keeps for the
	// Profile of namespace (databases, containers, volumes) as name ->
	// identity (a UID, an OID, a creation time: what changes when it is
	// deleted and made again). Checked after every write of a plan: what
	// the step keeps may not be deleted, not even to be made again, from
	// the moment it exists (data a pass of the plan made included).
	Data func(ctx context.Context, namespace string) (map[string]string, error)
	// Between, when set, acts as the other controllers the plugin's objects
	// wait for: Argo CD removing what a deleted Application deployed and
	// its finalizer, say. A run to quiet calls it before every pass; a
	// pass that says it waits (Result.Waiting) is run again, as a host
	// requeues it.
	Between func(ctx context.Context, c client.Client, namespace string) error
	// Retention is the host's policy for user data on Revoke; Retain when
	// empty.
	Retention plugins.Retention
	// Normalize, when set, takes out of each object the plugin holds what
	// differs from run to run by design (a generated password, a time)
	// before it is compared.
	Normalize func(u *unstructured.Unstructured)
	// Retained are the prefixes of the keys Observe returns (with the
	// Profile's name as <profile>) that may
	// outlive the Profile: the user data the host's Retain policy keeps,
	// what lives in the Profile's namespace (which goes with it), and what
	// Observe watches without the plugin owning it. Anything else Observe
	// still reports after a Delete step is left behind.
	Retained []string
	// Remembered are the prefixes of the outside-state record's keys that
	// the plugin keeps once it is removed from a Profile that stays (what
	// it learnt of someone else's grants, say). Any other key left then
	// names a piece the plugin still claims, and fails the run.
	Remembered []string
	// RivalDefaults, when set, returns the host's defaults under which a
	// second Profile may ask for what the Profile named profile asks for
	// in a shared space (its cloud identities allowed to every Profile,
	// and not shared): the rival plans ([Harness.Rivals]) run with them,
	// and the claim that keeps an identity to one Profile must refuse the
	// rival.
	RivalDefaults func(profile string) []byte
	// Equivalent declares contract-level mutants (by Mutant name) that
	// cannot change what this plugin does, each with the reason: make
	// mutation counts them as equivalent rather than survived, and fails
	// when one is killed after all. Declare one only with the proof in its
	// reason (every call idempotent, say), never to quiet a survivor.
	Equivalent map[string]string
}

// Step is one change of the Profile.
type Step struct {
	// Name says what the step does, for messages.
	Name string
	// Spec is the plugin's spec.plugins entry after the step (marshalled to
	// JSON; nil lists the plugin without a spec). {{ .Profile }} in it
	// stands for the run's Profile name, as for an outside identity made
	// for each run.
	Spec any
	// Remove drops the plugin from spec.plugins: the passes revoke.
	Remove bool
	// Delete deletes the Profile, as the last step: a plugin with outside
	// state revokes under its finalizer, with the Profile's spec; the
	// garbage collector takes the rest, so everything the plugin still
	// holds must carry an owner reference to the Profile.
	Delete bool
	// Labels, when set, are the Profile's labels from this step on, for a
	// plugin that selects Profiles by label.
	Labels map[string]string
	// Defaults, when set, are the host's defaults for the plugin from this
	// step on: a change of the host's configuration.
	Defaults []byte
	// Change, when set, changes what else the plugin reads, before the
	// step's passes, as a tenant or another controller would: a
	// contributor's RoleBinding made, a source Secret rewritten.
	Change func(ctx context.Context, c client.Client, namespace string) error
	// Error, when set, is what the step's last pass fails with, as a
	// documented False condition: the step is quiet when a pass writes
	// nothing and fails with an error that holds this text.
	Error string
}

// Harness runs scenarios against a real API server and checks what each
// perturbed run leaves against the run without perturbation.
type Harness struct {
	// Client reaches the API server without a cache.
	Client client.Client
	// RecordsNamespace holds the outside-state records; it is made when
	// missing.
	RecordsNamespace string
	// Parallel runs Survives' patterns side by side, each plan with its
	// own Profile as always. Set it when plans of different patterns
	// cannot meet outside the API server either: the plugin names its
	// outside state for the Profile, or each scenario newScenario makes
	// has outside servers of its own.
	Parallel bool

	// mutant, when set, changes every pass (see Mutation); stop, when
	// set, says that the plans left may be skipped; only, when set, is
	// the one plan to run (the mutation sample's).
	mutant *mutantRun
	stop   func() bool
	only   string
}
