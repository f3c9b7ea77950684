import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Two changes of issue 24:
 *
 * - `directory_versions.version` may be 0: an administrator's reset (docs/directory.md, "Resetting a
 *   provider's version") lowers a version a push set too high, down to "no snapshot version yet", while
 *   the row stays (the provider keeps taking memberships from snapshots). SQLite cannot alter a CHECK,
 *   so the small table (one row per identity connection) is copied.
 * - `approvals.requester_id`: the gateway's user id of the person who asked (docs/approvals.md,
 *   "Reviewers"), so the review page tells a requester by the internal id, never by a subject text
 *   another identity could also carry. Rows from before get it when exactly one person matches their
 *   issuer and subject (a builtin token's subject is the user id; an external one is looked up in the
 *   issuer's namespace); otherwise it stays NULL and nobody may approve that request.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.zipRight(
        sql`ALTER TABLE directory_versions DROP CONSTRAINT directory_versions_version_check`,
        sql`ALTER TABLE directory_versions ADD CONSTRAINT directory_versions_version_check CHECK (version >= 0)`
      ),
    orElse: () =>
      Effect.all([
        sql`CREATE TABLE directory_versions_next (
          provider TEXT PRIMARY KEY,
          version BIGINT NOT NULL CHECK (version >= 0),
          applied_at TEXT NOT NULL,
          summary TEXT NOT NULL
        )`,
        sql`INSERT INTO directory_versions_next (provider, version, applied_at, summary)
          SELECT provider, version, applied_at, summary FROM directory_versions`,
        sql`DROP TABLE directory_versions`,
        sql`ALTER TABLE directory_versions_next RENAME TO directory_versions`
      ])
  })

  yield* sql`ALTER TABLE approvals ADD COLUMN requester_id TEXT`
  yield* backfillRequesterIds
})

/**
 * Approvals without a requester id get the one person their issuer and subject name: a user whose id
 * is the subject (a builtin token), or the enterprise identity of that subject in the issuer's
 * namespace (an external-mode token). Two candidates (a subject crafted to read like a user id) or
 * none: it stays NULL.
 */
export const backfillRequesterIds = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const candidates = sql`FROM users u WHERE u.id = approvals.subject
    OR (u.kind = 'enterprise' AND u.namespace = 'external:' || approvals.issuer
      AND u.external_subject = approvals.subject)`
  yield* sql`UPDATE approvals SET requester_id = (SELECT u.id ${candidates})
    WHERE requester_id IS NULL AND (SELECT COUNT(*) ${candidates}) = 1`
})
