import { Agent, request } from "node:http"
import { Effect, Redacted } from "effect"
import { Client } from "ldapts"
import { authenticate } from "../../src/identity/ldap/authenticate.js"
import { ldapNamespace } from "../../src/identity/ldap/namespace.js"
import type { LdapSettings } from "../../src/identity/ldap/settings.js"
import { IdentityProviders } from "../../src/identity/providers/service.js"
import { PolicyWrites } from "../../src/policy/writes.js"
import { UserRepo } from "../../src/store/users.js"
import { Browser, beginCodeFlow, callbackParams, exchange, formFields } from "../../test/support/oauth-client.js"
import { SERVICE_DN } from "../../test/support/slapd.js"
import type { AuthBenchGateway } from "./auth-gateway.js"

const REDIRECT_URI = "http://127.0.0.1:50000/cb"

/** Saves `settings` as the gateway's enabled LDAP connection (what `PUT /api/v1/identity-providers` does). */
export const saveLdapConnection = (gateway: AuthBenchGateway, settings: LdapSettings) => {
  const { bind_password, ...rest } = settings
  return Effect.runPromise(
    Effect.gen(function* () {
      const providers = yield* IdentityProviders
      const outcome = yield* providers.save(
        "bench",
        0,
        {
          oidc: { enabled: false, token_auth_method: "client_secret_basic", scopes: ["openid"] },
          ldap: { enabled: true, ...rest, bind_password: Redacted.value(bind_password) }
        },
        undefined
      )
      if (outcome._tag !== "Saved") throw new Error(`the LDAP connection was not saved: ${JSON.stringify(outcome)}`)
    }).pipe(Effect.provide(gateway.base))
  )
}

/**
 * Enables everyone the directory's sign-ins created (they arrive pending), as an administrator's
 * `PUT /api/v1/identities/{id}` does.
 */
export const enableEveryone = (gateway: AuthBenchGateway, settings: LdapSettings) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const users = yield* UserRepo
      const writes = yield* PolicyWrites
      for (const id of yield* users.idsInNamespace(ldapNamespace(settings))) {
        const user = yield* users.findById(id)
        if (user._tag === "None" || user.value.status === "enabled") continue
        yield* writes.updateUser({ userId: "bench", kind: "builtin_admin" }, id, user.value.revision, { enabled: true })
      }
    }).pipe(Effect.provide(gateway.base))
  )

/** The directory alone, as the gateway's sign-in asks it: `authenticate` from src/identity/ldap/. */
export const directSignIn = (settings: LdapSettings, username: string, password: string) =>
  Effect.runPromise(Effect.asVoid(authenticate(settings, username, Redacted.make(password))))

/** A login transaction at the sign-in page, from `address` (X-Forwarded-For through a trusted proxy). */
export const openSignIn = async (origin: string, address?: string) => {
  const headers: Record<string, string> = address === undefined ? {} : { "x-forwarded-for": address }
  const browser = new Browser(origin)
  const { response, verifier } = await beginCodeFlow(browser, REDIRECT_URI, { state: "s" }, headers)
  const page = await browser.follow(response)
  if (page.status !== 200) throw new Error(`the sign-in page answered ${page.status}`)
  const fields = formFields(await page.text(), "/sso/login/ldap")
  return { browser, verifier, fields, headers }
}

/** The directory account form posted; the gateway's answer (a 303 to the client with a code, or a page). */
export const postSignIn = (
  opened: Awaited<ReturnType<typeof openSignIn>>,
  username: string,
  password: string
): Promise<Response> => opened.browser.post("/sso/login/ldap", { ...opened.fields, username, password }, opened.headers)

/**
 * Connections for a burst, opened and accepted before it (keep-alive, one per request): a burst over
 * fresh connections would be spread by how fast the gateway accepts them, not by how fast it signs in.
 */
export const openConnections = async (origin: string, count: number) => {
  const agent = new Agent({ keepAlive: true, maxSockets: count, maxFreeSockets: count })
  await Promise.all(Array.from({ length: count }, () => send(agent, new URL("/healthz", origin), "GET", "", {})))
  return agent
}

const send = (agent: Agent, url: URL, method: string, body: string, headers: Record<string, string | number>) =>
  new Promise<{ readonly status: number; readonly location: string | undefined }>((resolve, reject) => {
    const sent = request(url, { method, agent, headers }, (answer) => {
      answer.resume()
      answer.on("end", () => resolve({ status: answer.statusCode ?? 0, location: answer.headers.location }))
    })
    sent.on("error", reject)
    sent.end(body)
  })

/**
 * The directory account form posted over one of `agent`'s open connections: its status, whether it ended
 * with a code, and how long it took.
 */
export const postOver = async (
  agent: Agent,
  origin: string,
  opened: Awaited<ReturnType<typeof openSignIn>>,
  username: string,
  password: string
) => {
  const body = new URLSearchParams({ ...opened.fields, username, password }).toString()
  const started = performance.now()
  const answer = await send(agent, new URL("/sso/login/ldap", origin), "POST", body, {
    "content-type": "application/x-www-form-urlencoded",
    "content-length": Buffer.byteLength(body),
    cookie: [...opened.browser.cookies].map(([name, value]) => `${name}=${value}`).join("; "),
    ...opened.headers
  })
  const code = answer.location !== undefined && new URL(answer.location).searchParams.has("code")
  return { status: answer.status, code, ms: performance.now() - started }
}

/** The code of a completed sign-in exchanged for the gateway's tokens. */
export const redeem = async (origin: string, opened: Awaited<ReturnType<typeof openSignIn>>, answer: Response) => {
  const code = callbackParams(answer).get("code")
  if (code === null) throw new Error(`no code: ${answer.status} ${answer.headers.get("location")}`)
  const { response } = await exchange(origin, {
    code,
    verifier: opened.verifier,
    redirectUri: REDIRECT_URI,
    clientId: "cli",
    callback: new URLSearchParams()
  })
  if (response.status !== 200) throw new Error(`gateway token endpoint answered ${response.status}`)
}

/**
 * Watches the directory traffic of the gateway running in this process by wrapping ldapts' `Client`:
 * binds in flight, and connections bound as the service account at once. Each sign-in that talks to the
 * directory holds one service connection from its first bind to its end, so the second count is the
 * number of sign-ins at the directory at once — what `MAX_CONCURRENT_SIGN_INS` bounds.
 */
export const watchDirectory = () => {
  const prototype = Client.prototype
  const { bind, unbind } = prototype
  const service = new WeakSet<Client>()
  const counts = { binds: 0, mostBinds: 0, signIns: 0, mostSignIns: 0 }
  prototype.bind = async function (this: Client, ...args: Parameters<Client["bind"]>) {
    counts.binds += 1
    counts.mostBinds = Math.max(counts.mostBinds, counts.binds)
    if (args[0] === SERVICE_DN && !service.has(this)) {
      service.add(this)
      counts.signIns += 1
      counts.mostSignIns = Math.max(counts.mostSignIns, counts.signIns)
    }
    try {
      return await bind.apply(this, args)
    } finally {
      counts.binds -= 1
    }
  }
  prototype.unbind = function (this: Client) {
    if (service.delete(this)) counts.signIns -= 1
    return unbind.call(this)
  }
  return {
    counts,
    /** Forgets the highest counts seen so far (what is running now stays counted). */
    resetPeaks: () => {
      counts.mostBinds = counts.binds
      counts.mostSignIns = counts.signIns
    },
    restore: () => {
      prototype.bind = bind
      prototype.unbind = unbind
    }
  }
}
