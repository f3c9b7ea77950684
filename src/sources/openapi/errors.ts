import { Data } from "effect"

/** An OpenAPI document that cannot be imported, and the place in it at fault (RFC 6901). */
export class OpenApiInvalid extends Data.TaggedError("OpenApiInvalid")<{
  readonly pointer: string
  readonly message: string
}> {}

/**
 * The same refusal as the import's worker thread throws it (parse-worker.ts, where Effect is not
 * loaded), and sends to the main thread as `{ pointer, message }`. A kit (pointer.ts).
 */
export function refusalKit() {
  class Refusal {
    constructor(
      readonly pointer: string,
      readonly message: string
    ) {}
  }
  return { Refusal }
}

export type RefusalKit = ReturnType<typeof refusalKit>
