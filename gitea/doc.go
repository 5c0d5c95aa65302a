// Package gitea gives each Profile that wants one a Gitea of its own, per
// classified instance the host declares (for example unclassified and
// protected-b, each with its own database server, path prefix, opt-in label
// and NetworkPolicy). Plugin kind gitea.
//
// For each instance a Profile enables (by spec, enable: [name], or by the
// instance's opt-in label set to true) the plugin makes:
//
//   - on the instance's PostgreSQL server, with pgx: one role (LOGIN, no
//     other rights) and one database owned by it, named by Name from the
//     instance's namePrefix and the namespace: namePrefix + namespace, or,
//     longer than 63 bytes, namePrefix, what fits of the namespace, an _
//     and 16 hex digits of the namespace's SHA-256. A namespace never holds
//     an _, so a short name never meets a hashed one, and no two namespaces
//     share a name. Every name is a quoted identifier and every value a
//     parameter or quoted literal. New databases get encoding UTF8, locale
//     C and template template0 unless configured, which every PostgreSQL
//     accepts whatever locales its machine has; public access to them is
//     revoked;
//   - on both, a comment that proves them the plugin's for this Profile
//     (Proof: plugin, instance, Profile name and UID), written in the same
//     transaction as the role, and after the database. The plugin changes a
//     role's password, adopts, or drops only what carries that proof. A
//     database without a comment owned by a role with the proof that cannot
//     create databases itself is the plugin's too (a pass stopped between
//     CREATE DATABASE and COMMENT), and is finished. Nothing else is proof:
//     never a login with a password read from the Profile's namespace,
//     which its tenant can write. A role without any comment, as the first
//     release made them, is therefore a Conflict on GiteaReady that names
//     database.adopt, like anything else under the wanted names (another
//     Profile's, another program's, a SUPERUSER), and nothing is written or
//     dropped, unless the instance sets database.adopt (the host's alone: a
//     Profile's spec cannot set instances), which takes over such a role
//     and database (never one
//     with SUPERUSER, CREATEROLE, BYPASSRLS or REPLICATION, nor a member of
//     other roles, nor what carries profilekit's proof for another
//     Profile), gives the role a new password and marks both. A
//     Profile deleted and created again under the same name is another
//     Profile: what the first left (retention Retain) is a Conflict for the
//     second, adoption or not, until an administrator comments it with the
//     second's proof or removes the first's comment (and adoption is on).
//     The Conflict's message never quotes another Profile's proof;
//   - the Secret gitea-<instance>-db in the Profile's namespace, with PGHOST,
//     PGPORT, PGDATABASE, PGUSER, PGPASSWORD and PGSSLMODE. It is output
//     only: the host keeps the password itself ([HeldSecretName]: a Secret
//     named by the instance and the Profile's UID, in the namespace of the
//     instance's adminDSN Secret, which no tenant may write; it carries the
//     plugin's labels with profilekit.dev/role: outside-state, so that it is
//     never pruned, and an owner reference to the Profile, so that the
//     garbage collector removes it with the Profile). Every pass writes the
//     Secret from it by server-side apply: a tenant's edit or deletion is
//     put back within seconds (the host watches the Secret), never read,
//     and sends no SQL. The password is generated once, kept by the host
//     before the role is made, and sent to the server only as a
//     SCRAM-SHA-256 verifier. Whenever the database's desired state is made
//     true (a change, a reverify), the host's password is tried on the role
//     and set when it does not log in, so that GiteaReady is never True
//     while the Secret's password fails;
//   - upgrading from a version that kept the password in the Secret alone:
//     while the host keeps no password for a role that carries the
//     Profile's proof (or one of its owner's earlier Profiles'), the
//     Secret's password is read once, and kept as the host's when it logs
//     in as the role: a value, never a proof. Otherwise the role gets a new
//     password. The same holds when the password the host keeps is lost,
//     and for the owner of a name coming back with a new Profile (the
//     password the host kept went with the earlier Profile): her role is
//     given a new one. rotateLostPassword no longer changes anything;
//   - the Gitea Application through the apps plugin's builder: the host's
//     chart and values, with the plugin's values over them (the database,
//     the password from the Secret by reference, ROOT_URL = rootURL +
//     /<prefix>/<namespace>/, and no admin account: the chart gets no default
//     credentials, and the first user, the Profile's owner signing in through
//     the Kubeflow gateway, becomes Gitea's admin);
//   - one VirtualService built by the expose plugin's route builder: a
//     request to /<prefix>/?ns=<namespace>, the dashboard's link, is
//     redirected to /<prefix>/<namespace>/, which routes to the Gitea
//     Service in the namespace. No route matches the Referer header;
//   - a NetworkPolicy that admits the ingress gateway's pods, and nothing
//     else, to the Gitea pods (selectors from configuration);
//   - an Istio ServiceEntry for a database host outside the cluster;
//   - with the instance's banner, the ConfigMap gitea-<instance>-banner: one
//     line of HTML (the text escaped, the colours checked), mounted over
//     Gitea's custom header template (BannerMountPath) through the chart's
//     extraVolumes and extraContainerVolumeMounts, after the host's own, so
//     that every page names the classification.
//
// An instance's placement (nodeSelector, tolerations) becomes the chart's
// nodeSelector and tolerations: a protected-b Gitea runs on the nodes set
// aside for protected-b workloads. examples/host/config/statcan-gitea.yaml
// is the StatCan-style example: both classifications, their banners, the
// protected-b placement and the pod selector app: gitea,
// app.kubernetes.io/instance: gitea-<classification>.
//
// The administrator's DSN and the server's CA come from Secrets the host
// names (labelled app.kubernetes.io/managed-by=profilekit so that the host's
// cache holds them), never from flags; neither they nor any password reach
// a log or a condition. Connections verify the server's certificate and
// name against that CA (verify-full) unless the host sets sslMode: disable;
// a certificate that does not verify fails the connection, never falls back.
//
// Outside calls go through the shared outside-state record: a pass with
// nothing changed sends no SQL at all. A database error is a retried error
// on GiteaReady (reason PostgreSQLError, with the server's own message) and
// nothing is deleted; an invalid configuration is terminal (InvalidSpec or
// InvalidConfig, naming the field).
//
// namePrefix is required: a lower-case letter, then lower-case letters,
// digits, _ or -, ending with _, at most 32 bytes (such as gitea_), so that
// no role is named after a namespace alone (a Profile named postgres) and
// every name shows where the prefix ends. Instances that share a server
// need prefixes of which neither starts the other; their names then differ
// within the prefix. Servers are compared by host and port as configured.
//
// An instance the Profile no longer wants, and Revoke, remove the app, route,
// policy and ServiceEntry, and wait for Argo CD to remove what the
// Application deployed before the Profile's finalizer goes. The database,
// the role and the Secret with its password stay (retention Retain; a
// deleted Profile's Secret goes with its namespace, and the password the
// host kept with the Profile); with retention Delete
// the role's connections are terminated and database and role dropped, if
// both are the plugin's, and the host lets go of the password: anything else under their names is a Conflict,
// nothing is dropped, and the finalizer stays until an administrator
// resolves it. A deletion that waits on an unreachable server keeps the
// finalizer and says so on GiteaReady (PostgreSQLError).
//
// Host configuration:
//
//	gitea:
//	  enabled: all
//	  defaults:
//	    rootURL: https://kubeflow.example.org
//	    instances:
//	    - name: unclassified
//	      optInLabel: gitea.example.org/unclassified
//	      source: {repoURL: https://dl.gitea.com/charts/, chart: gitea, targetRevision: 12.1.0}
//	      database:
//	        host: gitea-unclassified.postgres.database.example.net
//	        adminDSN: {namespace: profilekit-system, name: gitea-unclassified-admin}
//	        ca: {namespace: profilekit-system, name: gitea-unclassified-ca}
//	        namePrefix: gitea_
//	    - name: protected-b
//	      optInLabel: gitea.example.org/protected-b
//	      source: {repoURL: https://dl.gitea.com/charts/, chart: gitea, targetRevision: 12.1.0}
//	      database:
//	        host: gitea-protected-b.postgres.database.example.net
//	        adminDSN: {namespace: profilekit-system, name: gitea-protected-b-admin}
//	        ca: {namespace: profilekit-system, name: gitea-protected-b-ca}
//	        namePrefix: gitea_
//
// A Profile that wants the unclassified Gitea:
//
//	apiVersion: kubeflow.org/v1
//	kind: Profile
//	metadata:
//	  name: team-a
//	  labels:
//	    gitea.example.org/unclassified: "true"
//	spec:
//	  owner: {kind: User, name: alice@example.org}
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition], [Config] and the types it holds ([Instance], [Database],
// [Gateway], [SecretKey], [Banner], [Placement]) with the JSON names, defaults
// and meaning of their fields, the Secret's name and keys ([SecretName],
// [KeyHost], [KeyPort], [KeyDatabase], [KeyUser], [KeyPassword],
// [KeySSLMode]), the Application's name ([AppName]), the database and role
// names [Name] gives, which existing databases are found by, the comment
// [Proof] gives, which proves them the plugin's, the name of the Secret
// the host keeps a password in ([HeldSecretName]), [ReasonPasswordLost]
// (deprecated, no longer reported) and the
// system name PostgreSQL ([SystemPostgreSQL]), and the condition GiteaReady.
// Experimental, and free to change in a minor release: [Plugin]'s methods
// beyond the [Plugin] interface, [Owns], [Connector], [Server],
// [DatabaseSpec], [Catalog], [RoleState], [DatabaseState], [NewPassword],
// [MaxIdentifier] and [MaxNamePrefix]; [ConfigFromEnv], [NewConfig],
// [OfflinePassword], the banner's [BannerName], [BannerKey] and
// [BannerMountPath], the SSL modes' constants [SSLDisable] and
// [SSLVerifyFull], and the constants of the defaults ([DefaultCAKey],
// [DefaultDSNKey], [DefaultEncoding], [DefaultGatewayNS], [DefaultHTTPPort],
// [DefaultLocale], [DefaultPort], [DefaultService], [DefaultTemplate]); run
// the plugin through its [Definition], and use these for tests and previews.
package gitea
