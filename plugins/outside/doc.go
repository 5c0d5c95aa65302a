// Package outside keeps what plugins make true in systems outside the
// cluster: the [Outside] that hosts give a plugin as its request's Outside.
//
// Ensure calls the outside system only when the desired state's hash differs
// from what the plugin's record says was made true, when a host-set
// re-verification period has passed, or when the Profile's
// profilekit.dev/reverify annotation changed. The record is a small
// ConfigMap in the host's own namespace ([RecordName] in
// [DefaultRecordsNamespace]), keyed by the Profile's UID, where no tenant can
// write. Every call has a timeout and is counted by plugin, system and
// result; a failure is an [Error], retried with backoff, whose reason names
// the system. EnsureAhead records a grant of access before it is made, so
// that a grant made and never recorded (the host stopped in between) is
// still removed once the Profile stops naming it. A name's Tenures keep
// what is kept under a Profile's name for the owner who held it, after the
// Profile is gone: hosts hold the name (Outside.Tenure) before every pass
// of a plugin with outside state, and a Profile of the name with another
// owner gets a Conflict and nothing. A host builds one Outside
// per pass and writes it when the pass ends:
//
//	record := outside.New(c, def.Kind(), profile, outside.Options{Namespace: hostNamespace},
//		outside.WithLiveReader(apiReader), outside.WithRecords(records))
//	res, err := def.Plugin.Apply(ctx, plugins.Request{Profile: profile, Outside: record, ...})
//	err = errors.Join(err, record.Flush(ctx))
//
// # Stability
//
// Stable under semver: [Outside] with [New], Ensure, Call, Forget, Recorded
// and Flush; [Options], [Option] and [Error]. The names it writes to
// clusters are stable in the same way: the record [RecordName] in
// [DefaultRecordsNamespace] or the host's namespace; [StateName], the name
// earlier versions used in the Profile's namespace, with
// [RecordsMigratedName] and [RoleMigrated]; and the metric names.
//
// Experimental, and free to change in a minor release: [NewOffline] with
// [Outside.Offline] and [Outside.Skipped]; [Outside.EnsureAhead],
// [Outside.Intend] and [Outside.Made]; [WithLiveReader], [WithRecords] with
// [Records] and [NewRecords]; [DefaultTimeout]; [WithClock];
// [Outside.Sweep]; [MigrateRecords]; [Outside.HeldElsewhere];
// [Outside.Claim] with [ClaimName], [ClaimGrace] and [RoleClaim];
// [Outside.ReportDangling], [Outside.Dangled] and [Outside.CheckDangling]
// with [DanglingName], [RoleDanglingTrust] and [ReasonDanglingTrust]; [Lazy]
// with [NewLazy]; [Ledger] with [RoleLedger], [ReasonLedger] and
// [ConfigMapRef]; [CallGate] with [WithCallGate]; the tenure of names:
// [Tenures] with [TenureName], [RoleTenure], [OwnerKey], [TenureError],
// [MaxTenureUIDs] and [FieldManagerTenure], [Outside.Tenure],
// [Outside.Tenures] and [Outside.Predecessors]; [WithClaimsFrom].
package outside
