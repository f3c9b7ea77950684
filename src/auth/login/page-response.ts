import type { HttpServerResponse } from "@effect/platform"
import { Data, Effect } from "effect"

/**
 * Ends a browser request early with a finished response (an error page, a redirect). Handlers fail
 * with it and `answerPage` turns it back into the response, so checks can short-circuit.
 */
export class PageResponse extends Data.TaggedError("PageResponse")<{
  readonly response: HttpServerResponse.HttpServerResponse
}> {}

export const answerPage = <E, R>(
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E | PageResponse, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, Exclude<E, PageResponse>, R> =>
  Effect.catchIf(
    handler,
    (error): error is PageResponse => error instanceof PageResponse,
    (error) => Effect.succeed(error.response)
  ) as Effect.Effect<HttpServerResponse.HttpServerResponse, Exclude<E, PageResponse>, R>
