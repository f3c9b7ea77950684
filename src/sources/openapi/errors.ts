import { Data } from "effect"

/** An OpenAPI document that cannot be imported, and the place in it at fault (RFC 6901). */
export class OpenApiInvalid extends Data.TaggedError("OpenApiInvalid")<{
  readonly pointer: string
  readonly message: string
}> {}
