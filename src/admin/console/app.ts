import { type HttpApp, HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Context, Effect } from "effect"
import { clientAddress } from "../../auth/client-address.js"
import { browserHeaders, html } from "../../auth/pages/html.js"
import { Config } from "../../config/service.js"
import { securityEvent } from "../../events/security-log.js"
import type { GenerationServices } from "../../runtime/generation-layer.js"
import { SessionRepo } from "../../store/sessions.js"
import { hasControlCharacter } from "../../text.js"
import { adminCheck } from "../auth.js"
import { makeStatusReport } from "../status.js"
import { CSRF_FIELD, csrfField, csrfRefusedEvent, sameOrigin, tokenMatches } from "./csrf.js"
import { readConsoleForm } from "./form.js"
import { homeRoute } from "./home.js"
import { consolePage, type LayoutFrame, problemPage } from "./layout.js"
import { consoleSections } from "./pages/index.js"
import type { ConsoleAnswer, ConsoleProblem, ConsoleRoute, ConsoleSection } from "./route.js"
import { routesAt } from "./router.js"
import { ConsoleSessions } from "./sessions.js"
import {
  clearSessionCookie,
  consoleSettingsOf,
  currentAccessToken,
  SESSION_COOKIE,
  signInCallback,
  startSignIn
} from "./sign-in.js"

/**
 * The sections the console mounts: the registry (src/admin/console/pages/index.ts). A test adds a
 * section of its own by providing this; production never does.
 */
export class ConsoleSectionList extends Context.Reference<ConsoleSectionList>()("gateway/ConsoleSectionList", {
  defaultValue: (): ReadonlyArray<ConsoleSection> => consoleSections
}) {}

const SIGN_OUT_PATH = "/console/sign-out"
const CALLBACK_PATH = "/console/callback"
const MAX_RETURN_LENGTH = 2048

/** Whether `path` is the console's: `/console` or below it. */
export const isConsolePath = (path: string): boolean => path === "/console" || path.startsWith("/console/")

/** A SeeOther's location: a console path of this origin, never another (`//host`, a scheme). */
const isConsoleLocation = (location: string): boolean =>
  /^\/console(?:[/?#]|$)/.test(location) && !location.includes("\\")

const seeOther = (location: string) =>
  HttpServerResponse.empty({ status: 303, headers: { ...browserHeaders(), location } })

/**
 * The console on the admin listener (docs/console.md): every request under `/console` passes here.
 * GET and POST only; a POST must come from the admin origin; every page but the sign-in's callback
 * needs a console session whose access token passes the Management API's own check (src/admin/auth.ts)
 * on this very request; a POST also carries the session's CSRF token. Then the route of the sections
 * registry answers, and its answer is put in the layout.
 */
export const makeConsoleApp = Effect.gen(function* () {
  const { config } = yield* Config
  const settings = consoleSettingsOf(config)
  const sessions = yield* ConsoleSessions
  const check = yield* adminCheck
  const report = yield* makeStatusReport
  const sections = yield* ConsoleSectionList
  // The generation's services, without the request the generation may have been built in: a reload
  // that a request starts (a tool-source write) builds the next generation in that request's fiber, so
  // its context can hold that request, and providing it would make every later console request read
  // the old one's method, headers and body.
  const context = Context.omit(
    HttpServerRequest.HttpServerRequest,
    HttpServerRequest.ParsedSearchParams,
    HttpRouter.RouteContext
  )(yield* Effect.context<GenerationServices>())
  const routes: ReadonlyArray<ConsoleRoute> = [homeRoute(report), ...sections.flatMap((section) => section.routes)]
  const nav = [{ label: "Overview", path: "/console" }, ...sections.flatMap((section) => section.nav)]

  const ended = (status: 401 | 403, message: string) => clearSessionCookie(problemPage(status, message))

  const app = Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const url = new URL(request.url, "http://console.invalid")
    const path = url.pathname
    if (settings === undefined) {
      return problemPage(
        404,
        'The console is off: set admin.client_id to a client of auth.sso.clients (docs/console.md, "Signing in").'
      )
    }
    const method = request.method
    if (method !== "GET" && method !== "POST") {
      return problemPage(405, "The console answers GET and POST only.", { headers: { allow: "GET, POST" } })
    }
    let decoded: string
    try {
      decoded = decodeURIComponent(url.pathname + url.search)
    } catch {
      return problemPage(400, "The address is not valid percent-encoding.")
    }
    if (hasControlCharacter(decoded)) return problemPage(400, "The address holds a control character.")
    if (path === CALLBACK_PATH && method === "GET") return yield* signInCallback(settings, check)
    if (method === "POST" && !sameOrigin(request.headers, settings.adminOrigin)) {
      yield* csrfRefusedEvent("origin", path)
      return problemPage(403, "This form was not sent from the console's own pages, so it was refused.")
    }

    const cookie = request.cookies[SESSION_COOKIE]
    const session = yield* sessions.find(cookie)
    if (session === undefined) {
      if (method === "GET") {
        const wanted = url.pathname + url.search
        return yield* startSignIn(settings, wanted.length <= MAX_RETURN_LENGTH ? wanted : "/console")
      }
      return yield* ended(401, "Your console session has ended; nothing was saved. Sign in again.")
    }
    const token = yield* currentAccessToken(settings, session)
    const admin =
      token === undefined
        ? ({
            _tag: "Left",
            left: { status: 401, code: "invalid_token", description: "The sign-in has ended." }
          } as const)
        : yield* Effect.either(check(`Bearer ${token}`))
    if (admin._tag === "Left") {
      yield* sessions.end(cookie)
      yield* securityEvent("console.access_refused", {
        user_id: session.userId,
        reason: admin.left.code,
        client_address: yield* clientAddress
      })
      return yield* ended(
        admin.left.status,
        admin.left.status === 401
          ? `Your sign-in has ended (${admin.left.description}) Sign in again.`
          : `The console is for administrators: ${admin.left.description}`
      )
    }
    session.lastSeen = yield* Clock.currentTimeMillis
    const frame: LayoutFrame = { nav, path, csrfField: csrfField(session.csrf) }

    let form = new URLSearchParams()
    if (method === "POST") {
      const read = yield* Effect.either(readConsoleForm)
      if (read._tag === "Left") return problemPage(read.left.status, read.left.message, { frame })
      if (!tokenMatches(read.right, session.csrf)) {
        yield* csrfRefusedEvent("token", path)
        return problemPage(
          403,
          "This form's security token is missing or out of date; nothing was saved. Open the page again.",
          {
            frame
          }
        )
      }
      form = read.right
      form.delete(CSRF_FIELD)
      if (path === SIGN_OUT_PATH) {
        yield* sessions.end(cookie)
        const now = yield* Clock.currentTimeMillis
        if (admin.right.caller.sessionId !== undefined) {
          yield* (yield* SessionRepo).revoke(admin.right.caller.sessionId, "signed_out", new Date(now))
        }
        yield* securityEvent("console.signed_out", {
          user_id: admin.right.userId,
          client_address: yield* clientAddress
        })
        return yield* clearSessionCookie(
          consolePage("Signed out", html`<p>You are signed out. <a href="/console">Sign in again</a>.</p>`, 200)
        )
      }
    }

    const candidates = routesAt(routes, path)
    if (candidates.length === 0) return problemPage(404, "There is no console page at this address.", { frame })
    const matched = candidates.find((candidate) => candidate.route.method === method)
    if (matched === undefined) {
      const allowed = [...new Set(candidates.map((candidate) => candidate.route.method))].join(", ")
      return problemPage(405, `This address answers ${allowed}.`, { frame, headers: { allow: allowed } })
    }
    const answer: ConsoleAnswer | ConsoleProblem = yield* matched.route
      .handler({
        admin: admin.right,
        params: matched.params,
        query: url.searchParams,
        form,
        csrfField: frame.csrfField
      })
      .pipe(Effect.catchTag("ConsoleProblem", (problem) => Effect.succeed(problem)))
    if (answer._tag === "ConsoleProblem") {
      const reload = candidates.some((candidate) => candidate.route.method === "GET") ? path : undefined
      const headers = answer.retryAfter === undefined ? undefined : { "retry-after": String(answer.retryAfter) }
      return problemPage(answer.status, answer.message, {
        frame,
        reload,
        ...(headers === undefined ? {} : { headers })
      })
    }
    if (answer._tag === "SeeOther") {
      if (!isConsoleLocation(answer.location)) {
        return yield* Effect.dieMessage(`a console route answered a redirect outside the console: ${answer.location}`)
      }
      session.notice = answer.notice
      return seeOther(answer.location)
    }
    const notice = method === "GET" ? session.notice : undefined
    if (method === "GET") session.notice = undefined
    return consolePage(answer.title, answer.body, answer.status ?? 200, { ...frame, notice })
  }).pipe(
    Effect.catchAllDefect((defect) =>
      Effect.as(
        Effect.logError("console request failed", defect),
        problemPage(500, "The console could not answer this request; the gateway's log has the details.")
      )
    ),
    Effect.provide(context)
  )
  return app satisfies HttpApp.Default<never, HttpServerRequest.HttpServerRequest>
})
