import { Effect, Option } from "effect"
import type { ConsoleAnswer, ConsoleProblem, ConsoleRequest, ConsoleRoute } from "../../src/admin/console/route.js"
import { html } from "../../src/auth/pages/html.js"
import { UserRepo } from "../../src/store/users.js"
import { inGateway, inGeneration, type OAuthGateway } from "./oauth-gateway.js"

/**
 * The built-in administrator as the console's core would hand it to a route once signed in: its user
 * id and a caller holding `gateway:admin` (the check itself is the core's, tested there).
 */
export const builtinAdmin = (gateway: OAuthGateway) =>
  inGateway(gateway)(
    Effect.gen(function* () {
      const admin = yield* (yield* UserRepo).findBuiltinAdmin
      if (Option.isNone(admin)) return yield* Effect.dieMessage("the test gateway has no built-in administrator")
      const userId = admin.value.id
      return {
        caller: {
          issuer: gateway.issuer,
          subject: userId,
          scopes: new Set(["gateway:admin"]),
          clientId: "admin-cli",
          sessionId: undefined,
          tokenId: undefined,
          expiresAt: Number.MAX_SAFE_INTEGER
        },
        userId,
        kind: admin.value.kind
      } satisfies ConsoleRequest["admin"]
    })
  )

/** A request to a console route: no parameters, query or form unless given. */
export const consoleRequest = (
  admin: ConsoleRequest["admin"],
  fields: Partial<Omit<ConsoleRequest, "admin">> = {}
): ConsoleRequest => ({
  admin,
  params: {},
  query: new URLSearchParams(),
  form: new URLSearchParams(),
  csrfField: html`<input type="hidden" name="csrf" value="test-csrf">`,
  ...fields
})

/** Runs `route` for `request` in the gateway's current generation: its answer, or the problem it refused with. */
export const runConsoleRoute = (
  gateway: OAuthGateway,
  route: ConsoleRoute,
  request: ConsoleRequest
): Effect.Effect<ConsoleAnswer | ConsoleProblem> =>
  inGeneration(gateway)(route.handler(request).pipe(Effect.catchAll((problem) => Effect.succeed(problem))))
