import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect } from "effect"
import { isReady, Readiness } from "../runtime/readiness.js"
import { reportedElsewhere } from "./request-context.js"

const noStore = { "cache-control": "no-store" }

/** `GET /healthz`: 200 `{"status":"ok"}` while a runtime exists (docs/operations.md, "Probes"). */
export const healthz = HttpRouter.get(
  "/healthz",
  Effect.succeed(HttpServerResponse.unsafeJson({ status: "ok" }, { headers: noStore }))
)

/**
 * `GET /readyz`: the readiness fields, 200 when the store, the verifier and every required backend are
 * ready, else 503. A 503 here writes no access line: readiness logs its changes (src/runtime/readiness.ts).
 */
export const readyz = HttpRouter.get(
  "/readyz",
  Effect.gen(function* () {
    const readiness = yield* Readiness
    const report = yield* readiness.report
    reportedElsewhere(NodeHttpServerRequest.toIncomingMessage(yield* HttpServerRequest.HttpServerRequest))
    return HttpServerResponse.unsafeJson(report, { status: isReady(report) ? 200 : 503, headers: noStore })
  })
)
