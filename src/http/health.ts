import { HttpRouter, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { isReady, Readiness } from "../runtime/readiness.js"

const noStore = { "cache-control": "no-store" }

/** `GET /healthz`: 200 `{"status":"ok"}` while a runtime exists (docs/operations.md, "Probes"). */
export const healthz = HttpRouter.get(
  "/healthz",
  Effect.succeed(HttpServerResponse.unsafeJson({ status: "ok" }, { headers: noStore }))
)

/** `GET /readyz`: the readiness fields, 200 when the verifier and every required backend is ready, else 503. */
export const readyz = HttpRouter.get(
  "/readyz",
  Effect.gen(function* () {
    const readiness = yield* Readiness
    const report = yield* readiness.report
    return HttpServerResponse.unsafeJson(report, { status: isReady(report) ? 200 : 503, headers: noStore })
  })
)
