// Package plugins is the contract every profilekit concern implements, and the
// machinery they share.
//
// A plugin manages one concern (quotas, limit ranges, network policies, ...) for
// one Profile at a time. It builds the objects it wants with pure functions, and
// hands them to an [Applier], which writes them with server-side apply under the
// plugin's own field manager, labels them as ours, points their owner reference
// at the Profile, leaves alone what already matches, and deletes what is ours and
// no longer wanted.
//
// A [Definition] tells a host what it needs to run a plugin: its config type with
// built-in defaults, the kinds of objects it owns (and which of those it reads
// whole: a host caches the others as metadata only), and whether it keeps state
// outside the Profile's namespace (which earns it a finalizer on the Profile).
// The config a plugin sees is decoded strictly: built-in defaults, then the
// host's defaults, then the Profile's spec.plugins entry, then validated. Input
// that can never succeed is a [TerminalError] with a reason.
//
// State outside the cluster (blob containers, databases, cloud IAM bindings)
// goes through [Outside], one mechanism for every plugin: Ensure calls the
// outside system only when the desired state's hash differs from what the
// plugin's record says was made true (a small ConfigMap in the host's own
// namespace, keyed by the Profile's UID, where no tenant can write; see
// [RecordName] and [MigrateRecords]), when a host-set re-verification period has passed, or when the
// Profile's [AnnotationReverify] changed. Every call has a timeout and is
// counted by plugin, system and result; a failure is an [OutsideError], retried
// with backoff, whose reason names the system. [Outside.EnsureAhead] records a
// grant of access before it is made, so that a grant made and never recorded
// (the host stopped in between) is still removed once the Profile stops
// naming it.
//
// Messages speak the Profile's language: a problem in a Profile's spec names
// its entry and field as the author wrote them (spec.plugins[0] (quotas).spec:
// unknown field "hardd"), one problem per line, and [FailureMessage] bounds
// what reaches a condition, an Event or an admission response to the first
// few problems and a count of the rest.
//
// Two hosts run plugins: the standalone controller-runtime reconciler and the
// upstream profile-controller adapter, both in package reconcilers.
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
// [Cluster]; [Definition]'s fields Plugin, NewConfig, Owns, OutsideState and
// ConditionType, and its methods Kind, Condition, Finalizer, FieldManager,
// ApplierOptions, Decode and DecodeHostDefaults; [ConfigOf], [Validator],
// [HostOnlyTag], [Entry], [EntryPath] and [Listed]; [Registry] with
// [NewRegistry]; the [Applier]'s [NewApplier], [NewRecorder], Sync, Apply,
// DeleteAll, Keep and Recorded with the options ([ApplierOption])
// [WithLiveReader], [WithScheme] and [WithAnyNamespace], and [Encoded];
// [TerminalError], [Terminal], [Terminalf], [IsTerminal], [ReasonOf] and the
// Reason constants ([ReasonApplied], [ReasonApplyFailed], [ReasonConflict],
// [ReasonRevoked], [ReasonRevokeFailed], [ReasonFinalizeFailed],
// [ReasonInvalidConfig], [ReasonInvalidLabel], [ReasonInvalidSpec]);
// [Outside]'s [NewOutside], Ensure, Call, Forget, Recorded and Flush with
// [OutsideOptions], [OutsideOption] and [OutsideError]; the ownership helpers
// ([OwnershipLabels], [OwnedSelector], [ManagedSelector], [IsOwnedBy],
// [OwnerReference], [Namespace], [IsUpstreamName], [CheckObjectName],
// [CoreKind]); the placeholders ([PlaceholderProfile], [PlaceholderNamespace],
// [PlaceholderOwner], [Values], [ValuesOf], [Expand], [UsesPlaceholder],
// [CheckPlaceholders]); the condition helpers ([ConditionTypeFor],
// [ConditionMessage], [FindCondition], [SetCondition], [RemoveCondition], with
// [ConditionTrue], [ConditionFalse] and [ConditionUnknown]); [Retention] with
// [RetentionRetain] and [RetentionDelete]; [FailureMessage] and
// [BoundMessage]. The names this package writes to clusters are stable in the
// same way: the ownership labels ([LabelManagedBy] with [ManagedByValue],
// [LabelPlugin], [LabelProfile]), [AnnotationAppliedHash],
// [AnnotationReverify], [LabelRole] with [RoleOutsideState], the finalizer
// profilekit.dev/<kind> ([FinalizerPrefix]), the field manager
// profilekit-<kind> ([FieldManagerPrefix], [FieldManagerFor]), the condition
// <Kind>Ready, the outside-state ConfigMap ([RecordName] in
// [DefaultRecordsNamespace] or the host's namespace; [StateName], the name
// earlier versions used in the Profile's namespace, with
// [RecordsMigratedName] and [RoleMigrated]), and the metric names.
//
// Experimental, and free to change in a minor release: [Builder] with
// [BuilderDefinition]; [Result]'s Waiting
// and RequeueAfter with [Result.Wait], [DefaultWait] and [ReasonWaiting];
// [AnnotationPaused] with [Paused] and [ReasonPaused]; [Definition]'s Reads
// with CachedWhole, MetadataOnly, [WholeKinds], [WithMetadataOnly],
// [NewMetadata], [NewMetadataList] and [FieldNames]; [Definition]'s Watches
// ([Watch], [Scope]), Runner ([Runtime]) and Upstream with
// [WithUpstreamObjects] and [Applier.Adopting], which serve the core plugin
// alone; [Request]'s Live with [Request.LiveReader]; [Request.WatchedReader]; [Applier.Annotate] and Unannotate with [Foreign] and
// [ForeignMissingError]; [ApplyFields]; [NewObject], [NewList];
// [NewOfflineOutside] with [Outside.Offline] and [Outside.Skipped];
// [Outside.EnsureAhead], [Outside.Intend] and [Outside.Made]; [WithOutsideLiveReader], [WithOutsideRecords] with [OutsideRecords] and [NewOutsideRecords], and
// [DefaultOutsideTimeout]; [WithClock];
// [Outside.Sweep]; [MigrateRecords]; [Outside.HeldElsewhere]; [Outside.Claim]
// with [ClaimName], [ClaimGrace] and [RoleClaim];
// [Outside.ReportDangling], [Outside.Dangled] and [Outside.CheckDangling] with [DanglingName],
// [RoleDanglingTrust] and [ReasonDanglingTrust]; [Lazy] with [NewLazy]; [CheckServiceAccounts]; [WriteObserver] with [WithWriteObserver] and [WriteRecall]; [Ledger]
// with [RoleLedger], [ReasonLedger] and [ConfigMapRef]; [Ready],
// [SameCondition], [ConditionReady], [ReasonPluginsReady] and [ReasonPending];
// [Replaceable] and [ReasonImmutableField]; the bounds of messages
// ([MaxMessageBytes], [MaxMessageProblems], [MaxProblemBytes]). The wording of
// error and condition messages is not API at all: match on reasons
// ([ReasonOf], the reason that leads a condition's message), never on the text
// after them.
package plugins
