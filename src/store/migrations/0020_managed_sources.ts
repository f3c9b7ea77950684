import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Managed tool sources (docs/tool-sources.md, "Managed storage"):
 *
 * - `managed_sources`: one row per backend, HTTP tool, OpenAPI import or tool group. `id` is the primary
 *   key across every kind (one endpoint namespace); `definition` is the record's JSON with each secret
 *   replaced by `{"sealed": "v1.…"}` (sealed with the configuration key, bound to the record and the
 *   secret's place); `revision` is what `If-Match` names.
 * - `managed_sources_state`: one row; `initialized_at` set once the database supplies backends (the YAML
 *   `backends[]` were imported then and are ignored afterwards).
 * - `source_proposals`: creates and updates waiting for a security reviewer, with the revisions of the
 *   target and of every record the change depends on (0: absent) as they were when it was proposed.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const timestamp = sql.onDialectOrElse({ pg: () => sql.literal("TIMESTAMPTZ"), orElse: () => sql.literal("TEXT") })
  yield* sql`CREATE TABLE managed_sources (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('backend', 'http_tool', 'openapi_import', 'tool_group')),
    revision INTEGER NOT NULL CHECK (revision >= 1),
    definition TEXT NOT NULL,
    updated_at ${timestamp} NOT NULL,
    updated_by TEXT
  )`
  yield* sql`CREATE TABLE managed_sources_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    initialized_at ${timestamp},
    initialized_by TEXT
  )`
  yield* sql`INSERT INTO managed_sources_state ${sql.insert({ id: 1, initialized_at: null, initialized_by: null })}`
  yield* sql`CREATE TABLE source_proposals (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('backend', 'http_tool', 'openapi_import', 'tool_group')),
    target_id TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('create', 'update')),
    definition TEXT NOT NULL,
    base_revisions TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN
      ('pending_approval', 'applying', 'applied', 'rejected', 'failed', 'invalidated', 'unknown')),
    proposed_by TEXT NOT NULL,
    proposed_by_name TEXT NOT NULL,
    created_at ${timestamp} NOT NULL,
    decided_by TEXT,
    decided_by_name TEXT,
    decided_at ${timestamp},
    failure TEXT
  )`
  yield* sql`CREATE INDEX source_proposals_state ON source_proposals (state, created_at)`
})
