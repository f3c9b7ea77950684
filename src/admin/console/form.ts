import { HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import { bodyText, notUtf8Description } from "../../http/read-body.js"
import { ConsoleProblem } from "./route.js"

/**
 * A console form as sent (percent-encoded), at most 4 MiB (docs/console.md, "Forms and CSRF"): room for
 * a tool-source definition of the API's 1 MiB however its characters are encoded (at most three bytes
 * each), and for the identity providers' two CA bundles. An OpenAPI document larger than a definition
 * the console takes is imported by its URL or through the Management API or `gateway admin`.
 */
export const MAX_CONSOLE_FORM_BYTES = 4 * 1024 * 1024

/** What the 413 page says: the limit, and where larger definitions go. */
export const formTooLargeMessage =
  "The form is larger than 4 MiB, the most the console reads. Nothing was saved. A larger definition, such as an OpenAPI document given inline (up to 32 MiB), is sent through the Management API (POST /api/v1/openapi-imports) or `gateway admin openapi-imports create`, or the import names its document by URL (source.url)."

/** C0 and C1 controls and DEL, except the tab and line breaks a multi-line field may hold. */
const isControl = (text: string): boolean => {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if ((code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) || (code >= 0x7f && code <= 0x9f)) return true
  }
  return false
}

/**
 * A console POST's fields: `application/x-www-form-urlencoded` only (415 otherwise), at most 4 MiB
 * (413), no control character in a name or value but tab, CR and LF (400). Repeated names are kept
 * (a list of checkboxes); routes read what they expect.
 */
export const readConsoleForm = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const type = (request.headers["content-type"] ?? "").split(";", 1)[0]?.trim().toLowerCase()
  if (type !== "application/x-www-form-urlencoded") {
    return yield* new ConsoleProblem({
      status: 415,
      message: "A console form is sent as application/x-www-form-urlencoded."
    })
  }
  const text = yield* bodyText(MAX_CONSOLE_FORM_BYTES).pipe(
    Effect.mapError((error) =>
      error.reason === "too_large"
        ? new ConsoleProblem({ status: 413, message: formTooLargeMessage })
        : new ConsoleProblem({
            status: 400,
            message: error.reason === "not_utf8" ? notUtf8Description : "The form could not be read."
          })
    )
  )
  const form = new URLSearchParams(text)
  for (const [name, value] of form) {
    if (isControl(name) || isControl(value)) {
      return yield* new ConsoleProblem({ status: 400, message: "The form holds a control character." })
    }
  }
  return form
})
