import { Effect, Layer, Option } from "effect"
import { type Caller, devSessionPrefix, SessionGuard, SessionRejected } from "../bearer/caller.js"

/**
 * DEVELOPMENT ONLY (`gateway serve --dev`, i.e. `npm start`): accepts the short-lived tokens that
 * `gateway dev-token` mints, recognised by their `dev:` session id, so a newcomer can try /mcp before the
 * authorization server exists. Every other token goes to the real SessionGuard when there is one, and is
 * refused otherwise. Never installed without `--dev`, so production never accepts a dev token.
 */
export { devSessionPrefix }

export const DevSessionGuard = Layer.effect(
  SessionGuard,
  Effect.map(Effect.serviceOption(SessionGuard), (inner) => {
    const isDev = (caller: Caller) => caller.sessionId?.startsWith(devSessionPrefix) === true
    return {
      check: (caller: Caller) => {
        if (isDev(caller)) return Effect.void
        return Option.match(inner, {
          onNone: () => Effect.fail(new SessionRejected({ reason: "no session store" })),
          onSome: (guard) => guard.check(caller)
        })
      },
      checkNow: (caller: Caller, now: number) =>
        isDev(caller) || (Option.isSome(inner) && inner.value.checkNow(caller, now))
    }
  })
)
