import { Effect } from "effect"
import { html } from "../../../auth/pages/html.js"
import { visibleText } from "../../../auth/pages/visible-text.js"
import { ConsoleProblem } from "../route.js"

/**
 * What the tool-source, approvals and audit pages share: times, JSON blocks with hidden characters
 * shown, and the refusals of the services they call as a console page's problem.
 */

/** An RFC 3339 time as read on a page: `2026-01-02 03:04:05 UTC`; none as a dash. */
export const when = (at: string | Date | null | undefined) => {
  if (at === null || at === undefined) return "—"
  const iso = typeof at === "string" ? at : at.toISOString()
  return `${iso.replace("T", " ").slice(0, 19)} UTC`
}

/** A JSON value, indented, every hidden or direction-changing character shown as `\uXXXX`. */
export const jsonBlock = (value: unknown) =>
  html`<pre dir="ltr">${visibleText(JSON.stringify(value, null, 2) ?? "")}</pre>`

/**
 * A JSON value to edit in a form: indented, and every hidden or direction-changing character inside a
 * string written as its JSON escape (`\u202e`; a pair of them above U+FFFF), so the text box shows
 * exactly what is stored and saving it unchanged stores the same value.
 */
export const jsonForEditing = (value: unknown) => visibleText(JSON.stringify(value, null, 2) ?? "")

/** A name or id as shown: hidden characters visible (the page must show exactly what is stored). */
export const shown = (text: string) => visibleText(text)

export const problem = (status: ConsoleProblem["status"], message: string) =>
  Effect.fail(new ConsoleProblem({ status, message }))

/** A path parameter the route names; its absence is the core's bug, not the person's. */
export const param = (params: Readonly<Record<string, string>>, name: string) => params[name] ?? ""
