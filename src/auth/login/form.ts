import { Effect } from "effect"
import { messagePage } from "../pages/message.js"
import { readForm } from "../token/form.js"
import { PageResponse } from "./page-response.js"

/** A browser form post's fields; an unreadable or repeated-field body ends in a page, not JSON. */
export const readPageForm = readForm.pipe(
  Effect.catchTag("HttpError", (error) =>
    Effect.fail(new PageResponse({ response: messagePage("Request refused", error.description, 400) }))
  )
)
