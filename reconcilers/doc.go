// Package reconcilers runs profilekit plugins.
//
// [Reconciler] is the standalone host: one controller-runtime controller per
// plugin, which watches Profiles, the plugin's own objects and the kinds it
// reads without writing (Definition.Watches, in a cache of their own, metadata
// only when the plugin asks for that), decides whether
// the plugin applies to a Profile (listed in spec.plugins, or enabled for all
// Profiles by the host), applies or revokes it, keeps its finalizer when it has
// state outside the namespace, and reports a <Kind>Ready condition, Events and
// metrics. A pass that waits (plugins.Result.Wait) shows Waiting on the
// condition and is looked at again, with no Warning Event; a terminal error
// goes to controller-runtime as a reconcile.TerminalError, which counts it
// and does not retry it; a Profile annotated profilekit.dev/paused
// (plugins.AnnotationPaused) gets no writes from the plugins it pauses,
// except revocations (on deletion, or when it no longer enables one). [CacheOptions] builds a manager cache that holds only the objects
// profilekit labels, so that memory does not grow with unrelated objects; a
// Reconciler watches and reads the owned kinds that its plugin does not read
// whole (Definition.Reads) as metadata only, so that their bodies never
// reach memory.
//
// # What wakes a plugin
//
// A Reconciler passes a Profile when something the plugin reads changed,
// and only then. The Profile wakes it when its spec, labels, finalizers or
// deletion change (not its status). An owned object wakes it when someone
// else changed or deleted it: the events of the plugin's own writes do not.
// A watched kind (Definition.Watches) wakes only the Profiles the plugin
// serves or has something to take back from, and of an object's updates
// only those its Watch.Changed says the plugin reads. With a namespace gate
// (WithNamespaceGate) a Profile whose namespace the core plugin has not
// made yet is not passed at all: the namespace's creation wakes it, and of
// the namespace's later updates only a change of its ownership or its
// deletion. The resync timer, the definition's Runner, a staged rollout and
// a retry wake it too. A pass of a plugin that does not apply to the
// Profile and left nothing on it does nothing, at once. The metrics
// profilekit_plugin_wakes_total and profilekit_plugin_reconciles_total
// count, per plugin and trigger, the events that asked for a pass and the
// passes they started (see examples/deploy/monitoring); the benchmark
// prints the reconciles of a convergence per Profile, plugin and trigger.
//
// [Fork] drops the same plugins into a fork of the upstream Kubeflow profile
// controller, whose Plugin interface has ApplyPlugin and RevokePlugin
// methods: one value for all of them, whose conditions, drift repair
// (WatchOwned), cached reads (ForkCacheOptions) and revocation of removed
// plugins work under upstream's own reconcile sequence. A lone [Adapter]
// in upstream's switch still works, with none of that.
//
// # Wiring
//
// In a manager of your own (ExampleNew runs this against a real API server;
// examples/custom-plugin is a whole program):
//
//	cfg = reconcilers.RateLimited(cfg, 50, 100) // one limiter for every API group
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
//		Scheme:         scheme, // client-go's kinds and kubeflow.AddToScheme
//		Cache:          reconcilers.CacheOptions(nil),
//		Client:         reconcilers.ClientOptions(),
//		MapperProvider: reconcilers.NewRESTMapper, // remembers the mappings found
//	})
//	status, err := reconcilers.NewStatusWriter(mgr, 0)
//	r, err := reconcilers.New(mgr, quotas.Definition(),
//		reconcilers.WithDefaults([]byte(`{"hard": {"limits.cpu": "16"}}`)), // the host's defaults, as JSON
//		reconcilers.WithEnabledForAll(nil),                                  // or only Profiles that list it
//		reconcilers.WithStatusWriter(status))
//	err = r.SetupWithManager(mgr)
//
// In a fork of the upstream controller (ExampleFork; examples/kubeflow-fork
// has the exact lines of each file): one Fork of every profilekit plugin,
// set up from the fork's SetupWithManager, added last to what
// GetPluginSpec returns, which skips the kinds the Fork serves:
//
//	fork, err := reconcilers.NewFork(
//		reconcilers.NewAdapter[*ProfileReconciler, *profilev1.Profile](quotas.Definition()),
//		reconcilers.NewAdapter[*ProfileReconciler, *profilev1.Profile](limitrange.Definition()))
//	err = fork.SetupWithManager(mgr, builder) // watches our kinds, writes conditions
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Reconciler] with
// [New], SetupWithManager, Reconcile, Applies and Name; the Options ([Option])
// [WithDefaults], [WithEnabledForAll], [WithShard], [WithResync],
// [WithRequestTimeout], [WithRetention], [WithConcurrency] with [DefaultConcurrency], [WithOutside],
// [WithStatusWriter] and [WithEventRecorder]; [DefaultResync] and
// [DefaultRequestTimeout]; [CacheOptions], [ClientOptions] and [RateLimited];
// [StatusWriter] with [NewStatusWriter], [DefaultStatusDelay],
// [DefaultStatusWait] and [WithStatusWait] ([StatusWriterOption]); [Adapter],
// [NewAdapter] and its options ([AdapterOption], [AdapterDefaults],
// [AdapterRetention], [AdapterOutside], [AdapterContext]); [Cluster]. So are
// what a [Reconciler] writes and exports: the controller name
// profilekit-<kind>, the Events' reasons, and the metrics
// profilekit_plugin_objects_total, profilekit_plugin_failures_total and
// profilekit_plugin_pass_duration_seconds with their labels.
//
// Experimental, and free to change in a minor release: [WithCachedWhole]
// with [WholeKinds],
// [WithNamespaceGate] and [FinalizerHandOver], which serve hosts that run
// the core plugin,
// [StatusWriter]'s Set, Drop and Expect as called from outside a [Reconciler],
// its Touch and ReadyStale, [WithTimeout], [LeanApplies], [LimitInFlight]
// with [DefaultMaxInFlight], [NewRESTMapper], [Precedence] with [NewPrecedence],
// [WithPrecedence] and [DefaultPrecedenceWait], [FirstPass] with
// [NewFirstPass] and [WithFirstPass], staged rollouts ([WithStaged] with
// [Settings] and [Staged]), and the fork
// support: [Fork] with [NewFork], [WatchOwned] and [ForkCacheOptions]; the
// finalizer hand-over's back-off ([HandOverBackoff], [MaxHandOverBackoff],
// [AnnotationHandedOver], [AnnotationFinalizerReturns],
// [ConditionFinalizerHandOver], [ReasonFinalizerReturned]); names' tenure
// ([ReasonTenureKept]); [WithRetired]; the repairs' back-off
// ([RepairsBeforeBackoff], [RepairWindow], [RepairBackoff],
// [MaxRepairBackoff]) and its metrics profilekit_repair_holds_total and
// profilekit_contested_objects; the metrics profilekit_plugin_wakes_total
// and profilekit_plugin_reconciles_total and the values of their trigger
// label.
package reconcilers
