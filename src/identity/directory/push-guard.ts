import { Clock, Effect } from "effect"
import { makeFailureWindow } from "../../auth/throttle.js"

/** Refused pushes (a wrong secret, a refused snapshot) one client address may make per 15 minutes. */
export const MAX_REFUSED_PUSHES = 10

/**
 * Rate limits of `PUT /sso/directory` (docs/directory.md, "Limits"), in memory: an address whose
 * pushes were refused `MAX_REFUSED_PUSHES` times in 15 minutes gets 429 with `Retry-After` for every
 * push without the right secret (the right one still passes: others behind the same address cannot
 * lock the adapter out); and one snapshot is applied at a time (the others wait), so racing pushes are
 * ordered and each is judged against the version the previous one left.
 */
export class DirectoryPushGuard extends Effect.Service<DirectoryPushGuard>()("gateway/DirectoryPushGuard", {
  effect: Effect.gen(function* () {
    const refused = makeFailureWindow(MAX_REFUSED_PUSHES)
    const applying = yield* Effect.makeSemaphore(1)
    return {
      /** Seconds this address must wait, or 0. */
      wait: (address: string) => Effect.map(Clock.currentTimeMillis, (now) => refused.wait(address, now)),
      refused: (address: string) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => refused.add(address, now))),
      oneAtATime: applying.withPermits(1)
    } as const
  })
}) {}
