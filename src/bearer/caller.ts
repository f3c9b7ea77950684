import { Context, Data, type Effect } from "effect"

/**
 * Who is calling /mcp, as established from a verified access token. `subject` is the gateway-internal
 * user id in builtin mode (never an upstream subject) and the external token's `sub` in external mode.
 */
export interface Caller {
  readonly issuer: string
  readonly subject: string
  readonly scopes: ReadonlySet<string>
  readonly clientId: string | undefined
  readonly sessionId: string | undefined
  readonly tokenId: string | undefined
  readonly expiresAt: number
}

/**
 * The session id prefix of `gateway dev-token` tokens (DEVELOPMENT ONLY): a gateway started with `--dev`
 * accepts them without a stored session (src/auth/dev-session.ts); any other refuses them, saying why.
 */
export const devSessionPrefix = "dev:"

export class SessionRejected extends Data.TaggedError("SessionRejected")<{ readonly reason: string }> {}

/**
 * The per-request check that the token's stored session is live and its user currently enabled
 * (docs/authorization-server.md, "Access token"). Provided by the authorization server; called after the JWT
 * itself verified, on every /mcp request, so revocation takes effect without waiting for expiry.
 */
export class SessionGuard extends Context.Tag("gateway/SessionGuard")<
  SessionGuard,
  {
    readonly check: (caller: Caller) => Effect.Effect<void, SessionRejected>
    /**
     * `check` answered from memory alone: true only when what `check` reads is cached and admits the
     * caller at `nowMillis`; false means "ask `check`", never "refused". Lets a common /mcp request be
     * decided without a fiber (docs/decisions.md, "Per-call overhead"); it must not admit what `check` refuses.
     */
    readonly checkNow: (caller: Caller, nowMillis: number) => boolean
  }
>() {}
