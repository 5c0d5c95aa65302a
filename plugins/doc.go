// Package plugins is the contract every profilekit concern implements: what a
// plugin is, what it is given and what it returns.
//
// A plugin manages one concern (quotas, limit ranges, network policies, ...) for
// one Profile at a time. It builds the objects it wants with pure functions, and
// hands them to the request's [Objects], which writes them with server-side
// apply under the plugin's own field manager, labels them as ours, points their
// owner reference at the Profile, leaves alone what already matches, and
// deletes what is ours and no longer wanted. State outside the cluster (blob
// containers, databases, cloud IAM bindings) goes through the request's
// [Outside], which calls an outside system only when what the plugin wants
// differs from what its record, kept out of the tenant's reach, says was made
// true.
//
// A [Definition] tells a host what it needs to run a plugin: its config type with
// built-in defaults, the kinds of objects it owns (fixed, or named by the
// host's config: [Definition.ForHost]; and which of those it reads
// whole: a host caches the others as metadata only), and whether it keeps state
// outside the Profile's namespace (which earns it a finalizer on the Profile).
// The config a plugin sees is decoded strictly: built-in defaults, then the
// host's defaults, then the Profile's spec.plugins entry, then validated. Input
// that can never succeed is a [TerminalError] with a reason. A pass that
// waits for something says so in its [Result] ([Result.Wait]); waiting is not
// an error.
//
// The mechanism lives in packages of its own: plugins/apply (the Applier
// behind Objects, and its offline Recorder), plugins/outside (the record
// behind Outside, the ledger of deletions, claims of shared identities) and
// reconcilers (the hosts). A plugin imports this package alone, and its
// tests whichever of those they drive.
//
// Messages speak the Profile's language: a problem in a Profile's spec names
// its entry and field as the author wrote them (spec.plugins[0] (quotas).spec:
// unknown field "hardd"), one problem per line, and [FailureMessage] bounds
// what reaches a condition, an Event or an admission response to the first
// few problems and a count of the rest.
//
// Two hosts run plugins: the standalone controller-runtime reconciler and the
// upstream profile-controller adapter, both in package reconcilers; the
// offline renderer of examples/host is a third.
//
// # Writing a plugin
//
// A plugin is a config type, a pure builder and a Definition (the Example
// of this package is a whole one; examples/custom-plugin runs one in a
// manager of its own):
//
//	type Config struct {
//		Name    string `json:"name,omitempty" profilekit:"hostonly"` // only the host sets it
//		Message string `json:"message,omitempty"`                    // a Profile may set it
//	}
//
//	func (c *Config) Validate() error { ... } // runs after every decode
//
//	func Definition() plugins.Definition {
//		return plugins.Definition{
//			Plugin: plugins.Funcs{
//				KindName: "welcome",
//				ApplyFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
//					cfg, err := plugins.ConfigOf[Config](req)
//					if err != nil {
//						return plugins.Result{}, err
//					}
//					return req.Objects.Sync(ctx, build(cfg, req.Profile)) // build reads and writes nothing
//				},
//				RevokeFunc: func(ctx context.Context, req plugins.Request) (plugins.Result, error) {
//					return req.Objects.DeleteAll(ctx)
//				},
//			},
//			NewConfig: func() any { return &Config{Name: "welcome", Message: "Hello"} },
//			Owns:      []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap")},
//		}
//	}
//
// A Profile enables it, and may set what the config lets it set:
//
//	spec:
//	  plugins:
//	  - kind: welcome
//	    spec: {message: "Hello team"}
//
// # Stability
//
// Stable under semver (see the README's Versioning section): the [Plugin]
// interface and its contract, [Funcs], [Request], [Result], [Change] and
// [Action] ([Created], [Configured], [Unchanged], [Deleted], [Skipped]);
// [Objects] and [Outside], which hosts implement and plugins call; [Cluster];
// [Definition]'s fields Plugin, NewConfig, Owns, OutsideState and
// ConditionType, and its methods Kind, Condition, Finalizer, FieldManager,
// Decode and DecodeHostDefaults; [ConfigOf], a config's Validate() error method,
// the `profilekit:"hostonly"` field tag, [EntryPath] and [Listed]; [Registry] with
// [NewRegistry]; [TerminalError], [Terminal], [Terminalf], [IsTerminal], [ReasonOf] and the
// Reason constants ([ReasonApplied], [ReasonApplyFailed], [ReasonConflict],
// [ReasonRevoked], [ReasonRevokeFailed], [ReasonFinalizeFailed],
// [ReasonInvalidConfig], [ReasonInvalidLabel], [ReasonInvalidSpec]);
// the ownership helpers
// ([OwnershipLabels], [OwnedSelector], [ManagedSelector], [IsOwnedBy],
// [OwnerReference], [Namespace], [IsUpstreamName], [CheckObjectName],
// [CoreKind]); the condition helpers ([ConditionTypeFor],
// [ConditionMessage] and [FindCondition], with
// [ConditionTrue], [ConditionFalse] and [ConditionUnknown]); [Retention] with
// [RetentionRetain] and [RetentionDelete]; [FailureMessage] and
// [BoundMessage]. The names this package writes to clusters are stable in the
// same way: the ownership labels ([LabelManagedBy] with [ManagedByValue],
// [LabelPlugin], [LabelProfile]), [AnnotationAppliedHash],
// [AnnotationReverify], [LabelRole] with [RoleOutsideState], the finalizer
// profilekit.dev/<kind> ([FinalizerPrefix]), the field manager
// profilekit-<kind> ([FieldManagerPrefix], [FieldManagerFor]) and the
// condition <Kind>Ready.
//
// Experimental, and free to change in a minor release: [Builder] with
// [BuilderDefinition] and [AfterWrite]; [Result]'s Waiting
// and RequeueAfter with [Result.Wait], [DefaultWait] and [ReasonWaiting];
// [AnnotationPaused] with [Paused] and [ReasonPaused]; [Definition]'s Reads
// (whose cache forms reconcilers decides); [Definition]'s Watches
// ([Watch] with its Changed, [Scope]), Runner ([Runtime]) and Upstream, which serve the core
// plugin alone; [Definition]'s OwnsFrom with [Definition.ForHost], for
// plugins whose owned kinds their host config names; [Request]'s Live
// with [Request.LiveReader]; [Request.WatchedReader]; [Objects]' Annotate, Unannotate, Mark and Unmark
// with [Foreign], [Marks] and [ForeignMissingError]; [Outside]'s methods
// other than Ensure, Call, Forget and Recorded; [ConditionReady],
// [ReasonPluginsReady] and [ReasonPending]; [Definition]'s Exclusive;
// [ReasonIdentityNotAllowed]; [ReasonContested]; the bounds of messages
// ([MaxMessageBytes], [MaxMessageProblems], [MaxProblemBytes]). The wording of
// error and condition messages is not API at all: match on reasons
// ([ReasonOf], the reason that leads a condition's message), never on the text
// after them.
package plugins
