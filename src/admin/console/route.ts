import { Data, type Effect } from "effect"
import type { Html } from "../../auth/pages/html.js"
import type { GenerationServices } from "../../runtime/generation-layer.js"
import type { AdminCaller } from "../middleware.js"

/**
 * One console page or form action (docs/console.md). The console's core (`src/admin/console/`) signs
 * the administrator in, checks origin and CSRF token on every POST, and hands each route this request;
 * a route calls the same services the Management API's handlers call, never a second implementation.
 */
export interface ConsoleRequest {
  /** The signed-in administrator, checked exactly as the Management API checks a token (AdminAuth). */
  readonly admin: typeof AdminCaller.Service
  /** Path parameters named in the route's `path` (`:id`), percent-decoded. */
  readonly params: Readonly<Record<string, string>>
  readonly query: URLSearchParams
  /** A POST's `application/x-www-form-urlencoded` fields, after origin and CSRF token were checked; empty on GET. */
  readonly form: URLSearchParams
  /** The hidden CSRF field every form of the page must carry (`${request.csrfField}` inside `<form>`). */
  readonly csrfField: Html
}

/** What a route answers: a page inside the console's layout, or a redirect after a form (POST/redirect/GET). */
export type ConsoleAnswer =
  | {
      readonly _tag: "Page"
      /** The page's `<h1>` and `<title>`: the layout renders it; `body` comes below it. */
      readonly title: string
      readonly body: Html
      readonly status?: number
    }
  | {
      readonly _tag: "SeeOther"
      /** A console path (`/console/...`): never another origin. */
      readonly location: string
      /** A one-line confirmation shown on the next page ("Account created."). */
      readonly notice?: string
    }

/**
 * An expected refusal, shown as a page with its status: 400 for a form that is wrong (say which field),
 * 404 for no such record, 409 for a conflict, 412 when the record changed since the form was rendered
 * (the form carries the revision it was rendered with; never a silent overwrite).
 */
export class ConsoleProblem extends Data.TaggedError("ConsoleProblem")<{
  readonly status: 400 | 403 | 404 | 409 | 412 | 413 | 415 | 429 | 503
  readonly message: string
  /** A 429's wait, in seconds: answered as `Retry-After`. */
  readonly retryAfter?: number
}> {}

export interface ConsoleRoute {
  readonly method: "GET" | "POST"
  /** Under `/console`, with `:name` parameters: `/console/identities/:id`. */
  readonly path: string
  readonly handler: (request: ConsoleRequest) => Effect.Effect<ConsoleAnswer, ConsoleProblem, GenerationServices>
}

/** An entry of the console's navigation (its landmark `<nav>`), in the order the registry lists them. */
export interface ConsoleNavItem {
  readonly label: string
  readonly path: string
}

/** What one area of the console contributes: its routes and its navigation entries. */
export interface ConsoleSection {
  readonly nav: ReadonlyArray<ConsoleNavItem>
  readonly routes: ReadonlyArray<ConsoleRoute>
}
