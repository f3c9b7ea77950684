import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Access policy (docs/access-policy.md): groups, memberships, the mappings of organization groups to
 * permission groups, and the audit trail of identity and permission changes.
 *
 * - `users` gains its optimistic-concurrency `revision`, the directory's active state (pushed snapshots
 *   set it; until then every user is active), when its upstream memberships were last verified, and the
 *   identity key of enterprise users (`namespace` = the provider connection, `external_subject`).
 * - `groups` holds permission groups (`kind = 'permission'`, provider `gateway:permissions`, always
 *   managed locally, carrying the permission object as JSON) and organization groups and departments
 *   learned from an upstream (`kind` group or department, separate id namespaces per provider).
 * - `group_sources` maps organization groups to permission groups (`source_groups`).
 * - `memberships.source`: `direct` (set by an administrator) or the upstream that owns it (`claims`,
 *   `directory`).
 * - `policy_version` is one row bumped by every policy write: its row lock serializes those writes (two
 *   concurrent demotions cannot both pass the last-administrator check), and a running gateway polls it
 *   to notice writes made by another process (`gateway init-admin`).
 * - The built-in Administrators group exists from the start; a built-in administrator created before
 *   this table existed joins it here.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const timestamp = sql.onDialectOrElse({ pg: () => sql.literal("TIMESTAMPTZ"), orElse: () => sql.literal("TEXT") })
  yield* sql`ALTER TABLE users ADD COLUMN revision INTEGER NOT NULL DEFAULT 1`
  yield* sql`ALTER TABLE users ADD COLUMN directory_active INTEGER NOT NULL DEFAULT 1`
  yield* sql`ALTER TABLE users ADD COLUMN membership_verified_at ${timestamp}`
  yield* sql`ALTER TABLE users ADD COLUMN namespace TEXT`
  yield* sql`ALTER TABLE users ADD COLUMN external_subject TEXT`
  yield* sql`CREATE UNIQUE INDEX users_external_identity ON users (namespace, external_subject)
    WHERE kind = 'enterprise'`

  yield* sql`CREATE TABLE groups (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    provider TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('permission', 'group', 'department')),
    external_id TEXT,
    managed_locally INTEGER NOT NULL CHECK (managed_locally IN (0, 1)),
    builtin TEXT,
    enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    permissions TEXT,
    revision INTEGER NOT NULL,
    created_at ${timestamp} NOT NULL,
    updated_at ${timestamp} NOT NULL,
    CHECK ((kind = 'permission') = (permissions IS NOT NULL)),
    CHECK ((kind = 'permission') = (external_id IS NULL)),
    CHECK (kind <> 'permission' OR managed_locally = 1)
  )`
  yield* sql`CREATE UNIQUE INDEX groups_external_id ON groups (provider, kind, external_id)
    WHERE external_id IS NOT NULL`
  yield* sql`CREATE UNIQUE INDEX groups_builtin ON groups (builtin) WHERE builtin IS NOT NULL`

  yield* sql`CREATE TABLE group_sources (
    group_id TEXT NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    source_group_id TEXT NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    PRIMARY KEY (group_id, source_group_id)
  )`
  yield* sql`CREATE INDEX group_sources_source ON group_sources (source_group_id)`

  yield* sql`CREATE TABLE memberships (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    group_id TEXT NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    source TEXT NOT NULL CHECK (source IN ('direct', 'claims', 'directory')),
    created_at ${timestamp} NOT NULL,
    PRIMARY KEY (user_id, group_id)
  )`
  yield* sql`CREATE INDEX memberships_group ON memberships (group_id)`

  yield* sql`CREATE TABLE audit_events (
    id TEXT PRIMARY KEY,
    at ${timestamp} NOT NULL,
    actor_id TEXT,
    action TEXT NOT NULL,
    target_kind TEXT NOT NULL,
    target_id TEXT NOT NULL,
    detail TEXT NOT NULL,
    request_id TEXT
  )`
  yield* sql`CREATE INDEX audit_events_at ON audit_events (at)`

  yield* sql`CREATE TABLE policy_version (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
  )`
  yield* sql`INSERT INTO policy_version (id, version) VALUES (1, 1)`

  const now = new Date().toISOString()
  const permissions = JSON.stringify({ roles: ["admin"], scopes: [], access: [] })
  yield* sql`INSERT INTO groups ${sql.insert({
    id: "administrators",
    name: "Administrators",
    provider: "gateway:permissions",
    kind: "permission",
    external_id: null,
    managed_locally: 1,
    builtin: "administrators",
    enabled: 1,
    permissions,
    revision: 1,
    created_at: now,
    updated_at: now
  })}`
  yield* sql`INSERT INTO memberships (user_id, group_id, source, created_at)
    SELECT id, 'administrators', 'direct', ${now} FROM users WHERE kind = 'builtin_admin'`
})
