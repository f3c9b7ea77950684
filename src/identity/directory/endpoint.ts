import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Effect, Redacted } from "effect"
import { addressBucket, clientAddress } from "../../auth/client-address.js"
import { Config } from "../../config/service.js"
import { constantTimeEqual } from "../../crypto/hashing.js"
import { SecurityLog } from "../../events/security-log.js"
import { HttpError } from "../../http/error-body.js"
import { bodyText, notUtf8Description } from "../../http/read-body.js"
import { DirectoryRepo } from "../../store/directory.js"
import { DirectorySnapshots } from "./apply.js"
import { directoryProvider } from "./provider.js"
import { DirectoryPushGuard } from "./push-guard.js"
import { checkSnapshot, MAX_SNAPSHOT_BYTES } from "./snapshot.js"

const fail = (status: number, code: HttpError["code"], description: string, headers?: Record<string, string>) =>
  Effect.fail(new HttpError({ status, code, description, ...(headers === undefined ? {} : { headers }) }))

/**
 * `PUT /sso/directory` (docs/directory.md): a company's adapter pushes its whole directory. The
 * bearer secret (`auth.sso.directory_token_env`) is compared in constant time before anything else is
 * read; the body is read up to 8 MiB, checked (src/identity/directory/snapshot.ts) and applied as one
 * complete replacement. Every refusal writes `directory.push_refused`; an applied snapshot writes
 * `directory.snapshot_applied`.
 */
export const directoryEndpoint = Effect.gen(function* () {
  const { secrets } = yield* Config
  const expected = secrets.directoryToken
  if (expected === undefined) return yield* fail(404, "not_found", "No route for this path.")
  const request = yield* HttpServerRequest.HttpServerRequest
  const guard = yield* DirectoryPushGuard
  const address = yield* clientAddress
  const bucket = addressBucket(address)
  const log = yield* SecurityLog
  const refused = (reason: string, detail?: string) =>
    Effect.zipRight(
      guard.refused(bucket),
      log.limited(bucket, "directory.push_refused", {
        reason,
        client_address: address,
        ...(detail === undefined ? {} : { detail: detail.slice(0, 500) })
      })
    )

  // The secret first (constant time, cheap): the right one always passes, so refused pushes from a
  // shared address cannot lock the adapter out; a wrong one from a throttled address gets 429.
  const header = request.headers["authorization"] ?? ""
  const token = /^Bearer ([\x21-\x7e]+)$/i.exec(header)?.[1]
  if (token === undefined || !constantTimeEqual(token, Redacted.value(expected))) {
    const wait = yield* guard.wait(bucket)
    if (wait > 0) {
      yield* log.limited(bucket, "directory.push_refused", { reason: "throttled", client_address: address })
      return yield* fail(
        429,
        "too_many_requests",
        "Too many refused directory pushes from this address; try again later.",
        {
          "retry-after": String(wait)
        }
      )
    }
    yield* refused(token === undefined ? "missing_secret" : "wrong_secret")
    return yield* fail(401, "invalid_token", "PUT /sso/directory needs the directory secret as a Bearer token.", {
      "www-authenticate": 'Bearer realm="gateway-directory"'
    })
  }
  const type = (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase()
  if (type !== "application/json") {
    yield* refused("unsupported_media_type")
    return yield* fail(415, "unsupported_media_type", "A snapshot is sent as application/json.")
  }
  const text = yield* bodyText(MAX_SNAPSHOT_BYTES).pipe(
    Effect.catchTag("BodyNotRead", (error) =>
      Effect.zipRight(
        refused(error.reason),
        error.reason === "too_large"
          ? fail(413, "payload_too_large", `A snapshot is at most ${MAX_SNAPSHOT_BYTES} bytes (8 MiB).`)
          : fail(
              400,
              "invalid_snapshot",
              error.reason === "not_utf8" ? notUtf8Description : "The body could not be read."
            )
      )
    )
  )
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    yield* refused("invalid_snapshot", "not JSON")
    return yield* fail(400, "invalid_snapshot", "The body is not JSON.")
  }
  const checked = checkSnapshot(parsed)
  if (checked._tag === "Invalid") {
    const description = `${checked.problems.join("; ")}${checked.more > 0 ? ` (and ${checked.more} more)` : ""}`
    yield* refused(checked.reason, description)
    return yield* fail(400, "invalid_snapshot", `The snapshot was rejected, nothing was applied: ${description}`)
  }
  const wanted = new URL(request.url, "http://gateway").searchParams.get("provider")
  const provider = yield* directoryProvider(wanted)
  if (provider === undefined) {
    yield* refused("no_identity_provider")
    return yield* fail(
      409,
      "no_identity_provider",
      wanted === null
        ? "No identity provider is configured: a snapshot is about the people of one (auth.sso.upstream, or a stored OIDC or LDAP connection)."
        : `provider=${wanted.slice(0, 20)}: no such identity connection is configured (oidc or ldap).`
    )
  }
  // Without ?provider, a push never lands on a connection other than the one earlier snapshots went
  // to (its identity settings changed, or another connection became the default): it is refused.
  if (wanted === null) {
    const earlier = yield* (yield* DirectoryRepo).providers()
    if (earlier.length > 0 && !earlier.includes(provider)) {
      yield* refused("provider_required")
      return yield* fail(
        409,
        "provider_required",
        "Earlier snapshots were applied to another identity connection (its settings changed, or another one is now the default): name the connection with ?provider=oidc or ?provider=ldap."
      )
    }
  }
  const snapshots = yield* DirectorySnapshots
  const applied = yield* guard
    .oneAtATime(
      Effect.flatMap(Clock.currentTimeMillis, (now) => snapshots.apply(provider, checked.snapshot, new Date(now)))
    )
    .pipe(
      Effect.catchTag("PolicyRefused", (error) =>
        Effect.zipRight(refused(error.code, error.description), fail(409, "stale_version", error.description))
      )
    )
  return yield* HttpServerResponse.json(applied, { headers: { "cache-control": "no-store" } })
})
