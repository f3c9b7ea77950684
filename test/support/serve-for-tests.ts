/**
 * The real `gateway` executable plus one test-only route, for process tests that need a request
 * that stays in flight: `GET /__test/slow?ms=N` answers after N milliseconds, and logs
 * `test slow request started` once it is in flight, so tests wait for that line instead of sleeping.
 * Production builds never include it: only this entry point passes the extra route.
 */
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { runCli } from "../../src/cli/run.js"

const slow = HttpRouter.empty.pipe(
  HttpRouter.get(
    "/__test/slow",
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const ms = Number(new URL(request.url, "http://x").searchParams.get("ms") ?? "0")
      yield* Effect.logInfo("test slow request started")
      yield* Effect.sleep(ms)
      return HttpServerResponse.unsafeJson({ slept: ms })
    })
  )
)

runCli(slow)
